package dev.kvroute.core.request;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.databind.node.TextNode;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Locale;
import java.util.function.Function;

/**
 * The shape checks of a request body read as Jackson trees: what each field may hold, how a chat
 * message's content parts, media and function calls become prompt text, and the error each wrong
 * shape gets ({@code PARAM: expected SHAPE, got KIND}, the param naming the field's path). {@link
 * JsonRequestParser} applies them to the fields it reads as small trees, and the tests' whole-body
 * reference parser applies the same ones, so the two differ only in how they read the body.
 *
 * <p>Stateless and thread-safe.
 */
final class RequestShapes {
  /** The shapes of a completion prompt, in error messages. */
  static final String PROMPT_SHAPES =
      "a string, a list of strings, a list of token ids, or a list of token-id lists";

  private RequestShapes() {}

  static void appendContent(StringBuilder text, JsonNode content, String at)
      throws InvalidRequestException {
    if (isAbsent(content)) {
      return;
    }
    if (content.isTextual()) {
      text.append(content.textValue());
      return;
    }
    if (!content.isArray()) {
      throw wrongType(at, "a string, null or an array of content parts", content);
    }
    for (int k = 0; k < content.size(); k++) {
      if (k > 0) {
        text.append('\n');
      }
      appendPart(text, content.get(k), at + "." + k);
    }
  }

  static void appendPart(StringBuilder text, JsonNode part, String at)
      throws InvalidRequestException {
    if (!part.isObject()) {
      throw wrongType(at, "a content part object", part);
    }
    JsonNode type = part.get("type");
    if (isAbsent(type)) {
      throw new InvalidRequestException(
          at + ".type: missing (expected: text, image_url or another content part type)",
          at + ".type");
    }
    if (!type.isTextual()) {
      throw wrongType(at + ".type", "a string", type);
    }
    switch (type.textValue()) {
      case "text":
        text.append(requiredString(part, "text", at));
        break;
      case "refusal":
        text.append(requiredString(part, "refusal", at));
        break;
      case "image_url":
      case "video_url":
      case "audio_url":
        text.append(mediaMarker(type.textValue(), mediaUrl(part, type.textValue(), at)));
        break;
      default:
        // input_audio, file and unknown part types: hash the whole part so different data differ.
        text.append(mediaMarker(type.textValue(), part.toString()));
        break;
    }
  }

  static String mediaUrl(JsonNode part, String field, String at)
      throws InvalidRequestException {
    JsonNode media = part.get(field);
    if (isAbsent(media)) {
      throw new InvalidRequestException(
          at + "." + field + ": missing (expected: an object with a url)", at + "." + field);
    }
    if (media.isTextual()) {
      return media.textValue();
    }
    if (!media.isObject()) {
      throw wrongType(at + "." + field, "an object with a url", media);
    }
    return requiredString(media, "url", at + "." + field);
  }

  static void appendFunctionCall(StringBuilder text, JsonNode function, String at)
      throws InvalidRequestException {
    if (isAbsent(function)) {
      throw new InvalidRequestException(
          at + ": missing (expected: an object with name and arguments)", at);
    }
    if (!function.isObject()) {
      throw wrongType(at, "an object with name and arguments", function);
    }
    String name = requiredString(function, "name", at);
    JsonNode args = function.get("arguments");
    String renderedArgs;
    if (isAbsent(args)) {
      renderedArgs = "{}";
    } else if (args.isTextual()) {
      renderedArgs = args.textValue();
    } else if (args.isObject()) {
      renderedArgs = args.toString();
    } else {
      throw wrongType(at + ".arguments", "a JSON string or an object", args);
    }
    if (text.length() > 0) {
      text.append('\n');
    }
    text.append("<tool_call>{\"name\": ")
        .append(TextNode.valueOf(name))
        .append(", \"arguments\": ")
        .append(renderedArgs)
        .append("}</tool_call>");
  }

  /** A short marker standing for media data: its type and a 128-bit SHA-256 prefix in hex. */
  static String mediaMarker(String type, String data) {
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
    byte[] digest = sha.digest(data.getBytes(StandardCharsets.UTF_8));
    StringBuilder sb = new StringBuilder(type.length() + 35);
    sb.append('<').append(type).append(':');
    for (int i = 0; i < 16; i++) {
      sb.append(Character.forDigit((digest[i] >> 4) & 0xF, 16))
          .append(Character.forDigit(digest[i] & 0xF, 16));
    }
    return sb.append('>').toString();
  }

  // ---- completions and SGLang -----------------------------------------------------------------

  // ---- prompts ------------------------------------------------------------------------------

  /**
   * A prompt given as a string ({@code textual} reads it), strings, token ids, or token-id lists; a
   * batch gives its first, after every item's shape is checked.
   */
  static PromptSegment promptOf(JsonNode prompt, String at, String shapes,
      Function<JsonNode, PromptSegment> textual) throws InvalidRequestException {
    if (prompt.isTextual()) {
      return textual.apply(prompt);
    }
    if (!prompt.isArray()) {
      throw wrongType(at, shapes, prompt);
    }
    if (prompt.isEmpty()) {
      throw new InvalidRequestException(at + ": empty (expected: " + shapes + ")", at);
    }
    JsonNode first = prompt.get(0);
    if (first.isTextual()) {
      for (int i = 1; i < prompt.size(); i++) {
        if (!prompt.get(i).isTextual()) {
          throw wrongType(at + "." + i, "a string like the first prompt", prompt.get(i));
        }
      }
      return PromptSegment.text(null, first.textValue());
    }
    if (first.isNumber()) {
      return PromptSegment.tokens(tokenIds(prompt, at));
    }
    if (first.isArray()) {
      int[] firstIds = tokenIds(first, at + ".0");
      for (int i = 1; i < prompt.size(); i++) {
        JsonNode p = prompt.get(i);
        if (!p.isArray()) {
          throw wrongType(at + "." + i, "a list of token ids like the first prompt", p);
        }
        tokenIds(p, at + "." + i);
      }
      return PromptSegment.tokens(firstIds);
    }
    throw wrongType(at + ".0", "a string, a token id or a list of token ids", first);
  }

  static int[] tokenIds(JsonNode list, String at) throws InvalidRequestException {
    int[] ids = new int[list.size()];
    for (int i = 0; i < ids.length; i++) {
      JsonNode id = list.get(i);
      if (!id.isIntegralNumber() || !id.canConvertToInt() || id.intValue() < 0) {
        throw wrongType(at + "." + i, "a non-negative integer token id", id);
      }
      ids[i] = id.intValue();
    }
    return ids;
  }

  static int sglangMaxNewTokens(JsonNode samplingParams) throws InvalidRequestException {
    if (isAbsent(samplingParams)) {
      return -1;
    }
    JsonNode params = samplingParams;
    String at = "sampling_params";
    if (params.isArray() && !params.isEmpty()) {
      params = params.get(0);
      at = "sampling_params.0";
    }
    if (!params.isObject()) {
      throw wrongType(at, "an object", params);
    }
    return nonNegativeInt(params, "max_new_tokens", at + ".max_new_tokens");
  }

  // ---- scalars --------------------------------------------------------------------------------

  /**
   * The session key: header {@code sessionHeader} when set, else the body field at {@code
   * sessionFieldPath} (a string, or an integer as its digits), else {@code null}.
   */
  static String sessionKeyOf(JsonNode root, Function<String, String> header, String sessionHeader,
      String[] sessionFieldPath, String sessionField) throws InvalidRequestException {
    String fromHeader = header.apply(sessionHeader);
    if (fromHeader != null && !fromHeader.isBlank()) {
      return fromHeader.trim();
    }
    JsonNode node = root;
    for (String step : sessionFieldPath) {
      if (node == null || !node.isObject()) {
        return null;
      }
      node = node.get(step);
    }
    if (isAbsent(node)) {
      return null;
    }
    if (node.isTextual()) {
      return node.textValue().isBlank() ? null : node.textValue();
    }
    if (node.isIntegralNumber()) {
      return node.asText();
    }
    throw wrongType(sessionField, "a string", node);
  }

  static String optionalString(JsonNode root, String field)
      throws InvalidRequestException {
    JsonNode node = root.get(field);
    if (isAbsent(node)) {
      return null;
    }
    if (!node.isTextual()) {
      throw wrongType(field, "a string", node);
    }
    return node.textValue();
  }

  /**
   * An {@code Optional[bool]} field as vLLM's request models read it ({@link LaxBoolean}): false
   * when absent or null; {@code "yes"}, {@code 1} and {@code "on"} are true; a value pydantic refuses
   * is a 400 naming pydantic's reason.
   */
  static boolean optionalBoolean(JsonNode root, String field)
      throws InvalidRequestException {
    JsonNode node = root.get(field);
    if (isAbsent(node)) {
      return false;
    }
    if (node.isBoolean()) {
      return node.booleanValue();
    }
    LaxBoolean.Result r = LaxBoolean.of(node);
    if (!r.ok()) {
      throw new InvalidRequestException(LaxBoolean.refusal(field, node, r.failure()), field);
    }
    return r.value();
  }

  static int nonNegativeInt(JsonNode parent, String field) throws InvalidRequestException {
    return nonNegativeInt(parent, field, field);
  }

  /**
   * A non-negative integer, or -1 when absent: a whole float such as {@code 16.0} too, and, as
   * vLLM's pydantic models read an {@code int} in lax mode ({@link LaxInteger}), a string holding one
   * ({@code "16"}) or a boolean.
   */
  static int nonNegativeInt(JsonNode parent, String field, String at)
      throws InvalidRequestException {
    JsonNode node = parent.get(field);
    if (isAbsent(node)) {
      return -1;
    }
    if (node.isTextual() || node.isBoolean()) {
      LaxInteger.Result r = LaxInteger.of(node);
      if (r.ok() && r.value() >= 0 && r.value() <= Integer.MAX_VALUE) {
        return (int) r.value();
      }
    }
    if (node.isNumber()) {
      double v = node.doubleValue();
      if (v >= 0 && v <= Integer.MAX_VALUE && v == Math.rint(v)) {
        return (int) v;
      }
      throw new InvalidRequestException(
          at + ": " + node.asText() + " (expected: a non-negative integer up to 2147483647)", at);
    }
    throw wrongType(at, "a non-negative integer", node);
  }

  /**
   * The OpenAI endpoints' {@code priority} and {@code n}, checked as vLLM's request models read them
   * ({@link LaxInteger}), so that the router's admission reads the same priority the engine would
   * and refuses what every engine would: {@code priority} an integer ({@code null} allowed, as
   * SGLang's optional field), {@code n} an integer from 1 to {@link SamplingLimits#MAX_N_SEQUENCES}
   * ({@code null} = 1).
   */
  static void checkPriorityAndN(JsonNode root) throws InvalidRequestException {
    JsonNode priority = root.get("priority");
    if (!isAbsent(priority)) {
      LaxInteger.Result r = LaxInteger.of(priority);
      if (!r.ok()) {
        throw new InvalidRequestException("priority: " + priority + " (expected: an integer, lower is served"
            + " earlier; pydantic: " + r.failure().message() + ")", "priority");
      }
    }
    JsonNode n = root.get("n");
    if (!isAbsent(n)) {
      LaxInteger.Result r = LaxInteger.of(n);
      if (!r.ok()) {
        throw new InvalidRequestException("n: " + n + " (expected: an integer from 1 to "
            + SamplingLimits.MAX_N_SEQUENCES + "; pydantic: " + r.failure().message() + ")", "n");
      }
      if (r.value() < 1) {
        throw new InvalidRequestException(SamplingLimits.nTooSmall(r.value()), "n");
      }
      if (r.value() > SamplingLimits.MAX_N_SEQUENCES) {
        throw new InvalidRequestException(SamplingLimits.nTooLarge(r.value()), "n");
      }
    }
  }

  static String requiredString(JsonNode parent, String field, String at)
      throws InvalidRequestException {
    JsonNode node = parent.get(field);
    String param = at + "." + field;
    if (isAbsent(node)) {
      throw new InvalidRequestException(param + ": missing (expected: a string)", param);
    }
    if (!node.isTextual()) {
      throw wrongType(param, "a string", node);
    }
    return node.textValue();
  }

  static boolean isAbsent(JsonNode node) {
    return node == null || node.isNull() || node.isMissingNode();
  }

  static InvalidRequestException wrongType(String param, String expected, JsonNode got) {
    return new InvalidRequestException(
        param + ": expected " + expected + ", got " + describe(got), param);
  }

  static String describe(JsonNode node) {
    JsonNodeType t = node.getNodeType();
    switch (t) {
      case ARRAY:
        return "an array";
      case OBJECT:
        return "an object";
      case STRING:
        return "a string";
      case NUMBER:
        return "a number";
      case BOOLEAN:
        return "a boolean";
      case NULL:
        return "null";
      default:
        return t.name().toLowerCase(Locale.ROOT);
    }
  }
}
