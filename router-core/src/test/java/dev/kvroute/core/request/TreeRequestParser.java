package dev.kvroute.core.request;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * The whole-body Jackson-tree parser that {@link JsonRequestParser} replaced, kept as the reference
 * the streaming parser must agree with (same views, same errors).
 */
final class TreeRequestParser implements RequestParser {
  private static final ObjectMapper MAPPER =
      JsonMapper.builder().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).build();

  private static final String PROMPT_SHAPES =
      "a string, a list of strings, a list of token ids, or a list of token-id lists";

  private final String sessionHeader;
  private final String[] sessionFieldPath;
  private final String sessionField;

  TreeRequestParser(String sessionHeader, String sessionField) {
    Objects.requireNonNull(sessionHeader, "sessionHeader");
    Objects.requireNonNull(sessionField, "sessionField");
    if (sessionHeader.isBlank()) {
      throw new IllegalArgumentException("sessionHeader: blank (expected: a header name)");
    }
    if (sessionField.isBlank()) {
      throw new IllegalArgumentException(
          "sessionField: blank (expected: a body field name or dotted path)");
    }
    this.sessionHeader = sessionHeader.toLowerCase(Locale.ROOT);
    this.sessionField = sessionField;
    this.sessionFieldPath = sessionField.split("\\.");
  }

  @Override
  public RequestView parse(
      Endpoint endpoint, byte[] body, int offset, int length, Function<String, String> header)
      throws InvalidRequestException {
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(header, "header");
    JsonNode root = readTree(body, offset, length);
    List<PromptSegment> segments;
    int maxTokens;
    switch (endpoint) {
      case CHAT_COMPLETIONS:
        segments = chatSegments(root.get("messages"));
        maxTokens = nonNegativeInt(root, "max_completion_tokens");
        if (maxTokens < 0) {
          maxTokens = nonNegativeInt(root, "max_tokens");
        }
        break;
      case COMPLETIONS:
        segments = List.of(completionPrompt(root.get("prompt")));
        maxTokens = nonNegativeInt(root, "max_tokens");
        break;
      case SGLANG_GENERATE:
        segments = List.of(generatePrompt(root));
        maxTokens = sglangMaxNewTokens(root.get("sampling_params"));
        break;
      default:
        throw new IllegalArgumentException("endpoint: " + endpoint);
    }
    return new RequestView(
        endpoint,
        optionalString(root, "model"),
        sessionKey(root, header),
        segments,
        optionalBoolean(root, "stream"),
        maxTokens);
  }

  private static JsonNode readTree(byte[] body, int offset, int length)
      throws InvalidRequestException {
    JsonNode root;
    try {
      root = MAPPER.readTree(body, offset, length);
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      String where =
          at == null ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr();
      throw new InvalidRequestException(
          "body: malformed JSON" + where + ": " + e.getOriginalMessage(), null);
    } catch (IOException e) {
      throw new InvalidRequestException("body: unreadable: " + e.getMessage(), null);
    }
    if (root == null || root.isMissingNode()) {
      throw new InvalidRequestException("body: empty (expected: a JSON object)", null);
    }
    if (!root.isObject()) {
      throw new InvalidRequestException(
          "body: expected a JSON object, got " + describe(root), null);
    }
    return root;
  }

  // ---- chat -----------------------------------------------------------------------------------

  private static List<PromptSegment> chatSegments(JsonNode messages)
      throws InvalidRequestException {
    if (isAbsent(messages)) {
      throw new InvalidRequestException(
          "messages: missing (expected: a non-empty array of messages)", "messages");
    }
    if (!messages.isArray()) {
      throw wrongType("messages", "an array of messages", messages);
    }
    if (messages.isEmpty()) {
      throw new InvalidRequestException(
          "messages: empty (expected: at least one message)", "messages");
    }
    List<PromptSegment> out = new ArrayList<>(messages.size());
    for (int i = 0; i < messages.size(); i++) {
      out.add(chatMessage(messages.get(i), "messages." + i));
    }
    return out;
  }

  private static PromptSegment chatMessage(JsonNode m, String at) throws InvalidRequestException {
    if (!m.isObject()) {
      throw wrongType(at, "a message object", m);
    }
    JsonNode role = m.get("role");
    if (isAbsent(role)) {
      throw new InvalidRequestException(
          at + ".role: missing (expected: a string such as user or assistant)", at + ".role");
    }
    if (!role.isTextual()) {
      throw wrongType(at + ".role", "a string", role);
    }
    StringBuilder text = new StringBuilder();
    JsonNode name = m.get("name");
    if (!isAbsent(name)) {
      if (!name.isTextual()) {
        throw wrongType(at + ".name", "a string", name);
      }
      text.append(name.textValue()).append(": ");
    }
    appendContent(text, m.get("content"), at + ".content");
    JsonNode toolCalls = m.get("tool_calls");
    if (!isAbsent(toolCalls)) {
      if (!toolCalls.isArray()) {
        throw wrongType(at + ".tool_calls", "an array of tool calls", toolCalls);
      }
      for (int j = 0; j < toolCalls.size(); j++) {
        String callAt = at + ".tool_calls." + j;
        JsonNode call = toolCalls.get(j);
        if (!call.isObject()) {
          throw wrongType(callAt, "a tool call object", call);
        }
        appendFunctionCall(text, call.get("function"), callAt + ".function");
      }
    }
    JsonNode functionCall = m.get("function_call");
    if (!isAbsent(functionCall)) {
      appendFunctionCall(text, functionCall, at + ".function_call");
    }
    return PromptSegment.text(role.textValue(), text.toString());
  }

  private static void appendContent(StringBuilder text, JsonNode content, String at)
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

  private static void appendPart(StringBuilder text, JsonNode part, String at)
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

  private static String mediaUrl(JsonNode part, String field, String at)
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

  private static void appendFunctionCall(StringBuilder text, JsonNode function, String at)
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
  private static String mediaMarker(String type, String data) {
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

  private static PromptSegment completionPrompt(JsonNode prompt) throws InvalidRequestException {
    if (isAbsent(prompt)) {
      throw new InvalidRequestException(
          "prompt: missing (expected: " + PROMPT_SHAPES + ")", "prompt");
    }
    return promptOf(prompt, "prompt", PROMPT_SHAPES);
  }

  private static PromptSegment generatePrompt(JsonNode root) throws InvalidRequestException {
    JsonNode text = root.get("text");
    JsonNode ids = root.get("input_ids");
    if (!isAbsent(text) && !isAbsent(ids)) {
      throw new InvalidRequestException(
          "text: given together with input_ids (expected: exactly one of them)", "text");
    }
    if (!isAbsent(text)) {
      if (!text.isTextual() && !(text.isArray() && (text.isEmpty() || text.get(0).isTextual()))) {
        throw wrongType("text", "a string or a list of strings", text);
      }
      return promptOf(text, "text", "a string or a list of strings");
    }
    if (!isAbsent(ids)) {
      if (!ids.isArray() || (!ids.isEmpty() && ids.get(0).isTextual())) {
        throw wrongType("input_ids", "a list of token ids or a list of token-id lists", ids);
      }
      return promptOf(ids, "input_ids", "a list of token ids or a list of token-id lists");
    }
    throw new InvalidRequestException(
        "text: missing (expected: text or input_ids)", "text");
  }

  /** A prompt given as a string, strings, token ids, or token-id lists; a batch gives its first. */
  private static PromptSegment promptOf(JsonNode prompt, String at, String shapes)
      throws InvalidRequestException {
    if (prompt.isTextual()) {
      return PromptSegment.text(null, prompt.textValue());
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

  private static int[] tokenIds(JsonNode list, String at) throws InvalidRequestException {
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

  private static int sglangMaxNewTokens(JsonNode samplingParams) throws InvalidRequestException {
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

  private String sessionKey(JsonNode root, Function<String, String> header)
      throws InvalidRequestException {
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

  private static String optionalString(JsonNode root, String field)
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

  private static boolean optionalBoolean(JsonNode root, String field)
      throws InvalidRequestException {
    JsonNode node = root.get(field);
    if (isAbsent(node)) {
      return false;
    }
    if (!node.isBoolean()) {
      throw wrongType(field, "a boolean", node);
    }
    return node.booleanValue();
  }

  private static int nonNegativeInt(JsonNode parent, String field) throws InvalidRequestException {
    return nonNegativeInt(parent, field, field);
  }

  /** A non-negative integer (a whole float such as {@code 16.0} too), or -1 when absent. */
  private static int nonNegativeInt(JsonNode parent, String field, String at)
      throws InvalidRequestException {
    JsonNode node = parent.get(field);
    if (isAbsent(node)) {
      return -1;
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

  private static String requiredString(JsonNode parent, String field, String at)
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

  private static boolean isAbsent(JsonNode node) {
    return node == null || node.isNull() || node.isMissingNode();
  }

  private static InvalidRequestException wrongType(String param, String expected, JsonNode got) {
    return new InvalidRequestException(
        param + ": expected " + expected + ", got " + describe(got), param);
  }

  private static String describe(JsonNode node) {
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
