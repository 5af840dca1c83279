package dev.kvroute.core.request;

import static dev.kvroute.core.request.RequestShapes.*;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * {@link RequestParser} reading the body once with Jackson's streaming parser, without a whole-body
 * tree; Jackson types never leave this package.
 *
 * <p>Jackson judges the syntax and words every error. The prompt's strings (a chat message's string {@code content}, a completion {@code prompt} or SGLang
 * {@code text} string) are not materialised: the reader checks them and leaves them in the body as
 * spans, and the segment hashes their bytes in place when its hash is first asked for ({@link
 * TextSegment#ofJson}), decoding the text only if the token cache misses. Every other field routing reads becomes a small Jackson tree and
 * is checked as a whole-body tree would be, after the whole body has been read (so malformed JSON
 * anywhere wins over a type error).
 *
 * <p>A chat body of the common shape is read by {@link ChatBodyScanner} instead, which builds the
 * same {@link Body} reading each message string once (end, validation, code points and, unless the
 * parser was made not to, text hash in one pass); it gives up on anything else, malformed bodies included, and this Jackson path reads
 * the body from the start, so every error is Jackson's as before.
 *
 * <p>The shape checks of the fields read as trees are {@link RequestShapes}, shared with the
 * tree-reading reference that {@code RequestParserEquivalenceTest} holds this parser to, so the two
 * differ only in how they read the body.
 */
final class JsonRequestParser implements RequestParser {
  /** Reads subtrees only; trailing tokens after the body are checked by {@link #requireEnd}. */
  static final ObjectMapper MAPPER = JsonMapper.builder().build();

  /** Strings longer than this many bytes are decoded by Jackson, which enforces its own limit. */
  private static final int MAX_SKIPPED_STRING_BYTES =
      MAPPER.getFactory().streamReadConstraints().getMaxStringLength();

  private final String sessionHeader;
  private final String[] sessionFieldPath;
  private final String sessionField;
  /** Whether {@link ChatBodyScanner} hashes message strings as it reads them ({@link RequestParser#create(String, String, boolean)}). */
  private final boolean hashTexts;

  JsonRequestParser(String sessionHeader, String sessionField) {
    this(sessionHeader, sessionField, true);
  }

  JsonRequestParser(String sessionHeader, String sessionField, boolean hashTexts) {
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
    this.hashTexts = hashTexts;
  }

  @Override
  public RequestView parse(
      Endpoint endpoint, byte[] body, int offset, int length, Function<String, String> header)
      throws InvalidRequestException {
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(header, "header");
    Body b = read(endpoint, body, offset, length);
    ObjectNode root = b.root;
    List<PromptSegment> segments;
    int maxTokens;
    switch (endpoint) {
      case CHAT_COMPLETIONS:
        segments = chatSegments(b);
        maxTokens = nonNegativeInt(root, "max_completion_tokens");
        if (maxTokens < 0) {
          maxTokens = nonNegativeInt(root, "max_tokens");
        }
        break;
      case COMPLETIONS:
        segments = List.of(completionPrompt(b, root.get("prompt")));
        maxTokens = nonNegativeInt(root, "max_tokens");
        break;
      case SGLANG_GENERATE:
        segments = List.of(generatePrompt(b, root));
        maxTokens = sglangMaxNewTokens(root.get("sampling_params"));
        break;
      default:
        throw new IllegalArgumentException("endpoint: " + endpoint);
    }
    if (endpoint != Endpoint.SGLANG_GENERATE) {
      checkPriorityAndN(root);
    }
    return new RequestView(
        endpoint,
        optionalString(root, "model"),
        sessionKey(root, header),
        segments,
        optionalBoolean(root, "stream"),
        maxTokens,
        new RequestView.Body(body, offset, length,
            endpoint == Endpoint.CHAT_COMPLETIONS ? messageSpans(b) : null));
  }

  /**
   * Where each message sits in the body, four offsets per message into the body array: the
   * object's first byte and the byte after its end, then its string content's first and after-last
   * byte (inside the quotes), or {@code -1, -1} when the content is not left in the body.
   */
  static int[] messageSpans(Body b) {
    int[] spans = new int[4 * b.messages.size()];
    for (int i = 0; i < b.messages.size(); i++) {
      Message m = (Message) b.messages.get(i);
      spans[4 * i] = m.start;
      spans[4 * i + 1] = m.end;
      spans[4 * i + 2] = m.contentSpan == null ? -1 : m.contentSpan.start;
      spans[4 * i + 3] = m.contentSpan == null ? -1 : m.contentSpan.end;
    }
    return spans;
  }

  // ---- reading --------------------------------------------------------------------------------

  /**
   * A JSON string left in the body: its content is {@code body[start, end)}; {@code codePoints} is
   * the decoded text's code-point count when the reader counted it, else -1; {@code hash} its
   * {@link TextHash} when the reader computed it, else null.
   */
  record Span(int start, int end, boolean escaped, int codePoints, TextHash hash) {}

  /** A message object: the fields routing reads; a string content as a {@link Span}. */
  static final class Message {
    JsonNode role;
    JsonNode name;
    JsonNode content;
    Span contentSpan;
    JsonNode toolCalls;
    JsonNode functionCall;
    /** The object's bytes in the body array: {@code [start, end)}. */
    int start;
    int end;
  }

  /**
   * The body as read: every top-level field as a tree, except the streamed prompt, which {@code
   * root} holds as a placeholder of the same JSON type (an empty array for {@code messages}, an
   * empty string for a prompt string) so that session-key lookups see the same shapes.
   */
  static final class Body {
    final byte[] bytes;
    final ObjectNode root = MAPPER.createObjectNode();
    final PolynomialHasher hasher = new PolynomialHasher();
    /** Whether the segments' hashes are computed now (else when first asked for). */
    boolean hashTexts = true;
    /** {@code messages} as elements ({@link Message} or a non-object {@link JsonNode}), or null. */
    List<Object> messages;
    /** The prompt string ({@code prompt} or {@code text}) left in the body, or null. */
    Span prompt;

    Body(byte[] bytes) {
      this.bytes = bytes;
    }
  }

  /**
   * The body as read: a chat body of the common shape by {@link ChatBodyScanner}, which reads each
   * message string once; anything else, and every malformed body, by {@link #readWithJackson}.
   */
  Body read(Endpoint endpoint, byte[] body, int offset, int length)
      throws InvalidRequestException {
    if (endpoint == Endpoint.CHAT_COMPLETIONS) {
      Body b = ChatBodyScanner.read(body, offset, length, MAX_SKIPPED_STRING_BYTES, hashTexts);
      if (b != null) {
        b.hashTexts = hashTexts;
        return b;
      }
    }
    Body b = readWithJackson(endpoint, body, offset, length);
    b.hashTexts = hashTexts;
    return b;
  }

  /** The body as Jackson's streaming parser reads it, which judges and words every error. */
  Body readWithJackson(Endpoint endpoint, byte[] body, int offset, int length)
      throws InvalidRequestException {
    String promptField =
        endpoint == Endpoint.COMPLETIONS
            ? "prompt"
            : endpoint == Endpoint.SGLANG_GENERATE ? "text" : null;
    // A one-step session field naming the prompt string must see its text: keep it a tree then.
    if (promptField != null
        && sessionFieldPath.length == 1
        && sessionFieldPath[0].equals(promptField)) {
      promptField = null;
    }
    Body b = new Body(body);
    try (JsonParser p = MAPPER.createParser(body, offset, length)) {
      JsonToken t = p.nextToken();
      if (t == null) {
        throw new InvalidRequestException("body: empty (expected: a JSON object)", null);
      }
      if (t != JsonToken.START_OBJECT) {
        JsonNode root = p.readValueAsTree();
        requireEnd(p);
        throw new InvalidRequestException(
            "body: expected a JSON object, got " + describe(root), null);
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        t = p.nextToken();
        if (endpoint == Endpoint.CHAT_COMPLETIONS
            && t == JsonToken.START_ARRAY
            && field.equals("messages")) {
          b.messages = readMessages(p, body, offset, length);
          b.root.set(field, b.root.arrayNode());
        } else if (t == JsonToken.VALUE_STRING && field.equals(promptField)) {
          b.prompt = span(p, body, offset, length);
          b.root.set(field, b.prompt == null ? TextNode.valueOf(p.getText()) : TextNode.valueOf(""));
        } else {
          if (field.equals("messages")) {
            b.messages = null;
          } else if (field.equals(promptField)) {
            b.prompt = null;
          }
          b.root.set(field, tree(p));
        }
      }
      requireEnd(p);
    } catch (JsonProcessingException e) {
      JsonLocation at = e.getLocation();
      String where =
          at == null ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr();
      throw new InvalidRequestException(
          "body: malformed JSON" + where + ": " + withoutJacksonNames(e.getOriginalMessage()), null);
    } catch (IOException e) {
      throw new InvalidRequestException("body: unreadable: " + e.getMessage(), null);
    }
    return b;
  }

  /**
   * Jackson's message without the names of its own settings, which mean nothing to an API client
   * (e.g. "Document nesting depth (1001) exceeds the maximum allowed (1000, from
   * `StreamReadConstraints.getMaxNestingDepth()`)" loses the part from ", from").
   */
  static String withoutJacksonNames(String message) {
    return message == null ? "" : message.replaceAll(", from `[^`]*`", "")
        .replaceAll("Source: REDACTED \\(`[A-Za-z_.]+` [a-z]+\\); ", "")
        .replaceAll(" \\(`[A-Za-z_.]+` [a-z]+\\)", "");
  }

  /** Fails, as a whole-body read with trailing tokens forbidden does, if anything follows. */
  private static void requireEnd(JsonParser p) throws IOException, InvalidRequestException {
    JsonToken t = p.nextToken();
    if (t != null) {
      JsonLocation at = p.currentTokenLocation();
      throw new InvalidRequestException(
          "body: malformed JSON at line " + at.getLineNr() + ", column " + at.getColumnNr()
              + ": trailing token (" + t.asString() + ") after the JSON value",
          null);
    }
  }

  /** The roles most messages name, as shared nodes (a {@link TextNode} is immutable). */
  private static final TextNode[] COMMON_STRINGS = {
    TextNode.valueOf("user"), TextNode.valueOf("assistant"), TextNode.valueOf("system"), TextNode.valueOf("tool")
  };

  /**
   * The value at the current token as {@code readValueAsTree} reads it with the default mapper: a
   * string, a boolean and a 32- or 64-bit integer are built here (a common role as a shared node),
   * anything else through {@code readValueAsTree}. Each {@code readValueAsTree} call builds a Jackson
   * deserialization context, and a chat body has one per message and top-level field: on the proxy's
   * hot path that was a measurable share of its time and allocation (docs/performance.md).
   */
  private static JsonNode tree(JsonParser p) throws IOException {
    switch (p.currentToken()) {
      case VALUE_STRING:
        char[] c = p.getTextCharacters();
        int off = p.getTextOffset();
        int len = p.getTextLength();
        for (TextNode common : COMMON_STRINGS) {
          String v = common.textValue();
          if (sameChars(v, c, off, len)) {
            return common;
          }
        }
        return TextNode.valueOf(p.getText());
      case VALUE_TRUE:
        return BooleanNode.TRUE;
      case VALUE_FALSE:
        return BooleanNode.FALSE;
      case VALUE_NUMBER_INT:
        JsonParser.NumberType type = p.getNumberType();
        if (type == JsonParser.NumberType.INT) {
          return IntNode.valueOf(p.getIntValue());
        }
        if (type == JsonParser.NumberType.LONG) {
          return LongNode.valueOf(p.getLongValue());
        }
        return p.readValueAsTree();
      default:
        return p.readValueAsTree();
    }
  }

  private static boolean sameChars(String s, char[] c, int off, int len) {
    if (s.length() != len) {
      return false;
    }
    for (int i = 0; i < len; i++) {
      if (s.charAt(i) != c[off + i]) {
        return false;
      }
    }
    return true;
  }

  /** Reads the elements of the array at the current {@code START_ARRAY}. */
  private static List<Object> readMessages(JsonParser p, byte[] body, int offset, int length)
      throws IOException {
    List<Object> out = new ArrayList<>();
    JsonToken t;
    while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
      if (t == JsonToken.START_OBJECT) {
        int start = offset + (int) p.currentTokenLocation().getByteOffset();
        Message m = readMessage(p, body, offset, length);
        m.start = start;
        m.end = offset + (int) p.currentLocation().getByteOffset();
        out.add(m);
      } else {
        out.add(p.readValueAsTree());
      }
    }
    return out;
  }

  /** Reads the message object at the current {@code START_OBJECT}; other fields are skipped. */
  private static Message readMessage(JsonParser p, byte[] body, int offset, int length)
      throws IOException {
    Message m = new Message();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken t = p.nextToken();
      switch (field) {
        case "role":
          m.role = tree(p);
          break;
        case "name":
          m.name = tree(p);
          break;
        case "content":
          m.contentSpan = t == JsonToken.VALUE_STRING ? span(p, body, offset, length) : null;
          m.content = m.contentSpan == null ? p.readValueAsTree() : null;
          break;
        case "tool_calls":
          m.toolCalls = p.readValueAsTree();
          break;
        case "function_call":
          m.functionCall = p.readValueAsTree();
          break;
        default:
          p.skipChildren();
          break;
      }
    }
    return m;
  }

  /**
   * The current {@code VALUE_STRING} as a {@link Span}, leaving Jackson to validate and skip it; or
   * {@code null} when Jackson must decode it instead (it is long enough to meet Jackson's string
   * length limit, or unterminated). Non-ASCII content is decoded by Jackson here, which checks its
   * UTF-8 as a tree read would, into Jackson's buffer rather than a {@code String}.
   */
  private static Span span(JsonParser p, byte[] body, int offset, int length) throws IOException {
    int quote = offset + (int) p.currentTokenLocation().getByteOffset();
    if (quote < offset || quote >= offset + length || body[quote] != '"') {
      return null;
    }
    long scanned = JsonStrings.scan(body, quote + 1, offset + length);
    if (scanned < 0) {
      return null;
    }
    int end = (int) scanned;
    if (end - quote - 1 > MAX_SKIPPED_STRING_BYTES) {
      return null;
    }
    if ((scanned & JsonStrings.NON_ASCII) != 0) {
      p.getTextLength();
    }
    return new Span(quote + 1, end, (scanned & JsonStrings.ESCAPED) != 0, -1, null);
  }

  private static PromptSegment segment(Body b, String role, Span s) {
    TextHash hash = s.hash;
    if (hash == null && b.hashTexts) {
      hash = JsonStrings.hash(b.bytes, s.start, s.end, s.escaped, b.hasher);
    }
    return TextSegment.ofJson(role, b.bytes, s.start, s.end, s.escaped, s.codePoints, hash);
  }

  // ---- chat -----------------------------------------------------------------------------------

  private static List<PromptSegment> chatSegments(Body b) throws InvalidRequestException {
    if (b.messages == null) {
      JsonNode messages = b.root.get("messages");
      if (isAbsent(messages)) {
        throw new InvalidRequestException(
            "messages: missing (expected: a non-empty array of messages)", "messages");
      }
      throw wrongType("messages", "an array of messages", messages);
    }
    if (b.messages.isEmpty()) {
      throw new InvalidRequestException(
          "messages: empty (expected: at least one message)", "messages");
    }
    List<PromptSegment> out = new ArrayList<>(b.messages.size());
    for (int i = 0; i < b.messages.size(); i++) {
      Object m = b.messages.get(i);
      if (!(m instanceof Message)) {
        throw wrongType("messages." + i, "a message object", (JsonNode) m);
      }
      out.add(chatMessage(b, (Message) m, i));
    }
    return out;
  }

  private static PromptSegment chatMessage(Body b, Message m, int index)
      throws InvalidRequestException {
    JsonNode role = m.role;
    if (m.contentSpan != null
        && role != null
        && role.isTextual()
        && isAbsent(m.name)
        && isAbsent(m.toolCalls)
        && isAbsent(m.functionCall)) {
      return segment(b, role.textValue(), m.contentSpan); // the common case: no path string built
    }
    String at = "messages." + index;
    if (isAbsent(role)) {
      throw new InvalidRequestException(
          at + ".role: missing (expected: a string such as user or assistant)", at + ".role");
    }
    if (!role.isTextual()) {
      throw wrongType(at + ".role", "a string", role);
    }
    StringBuilder text = new StringBuilder();
    JsonNode name = m.name;
    if (!isAbsent(name)) {
      if (!name.isTextual()) {
        throw wrongType(at + ".name", "a string", name);
      }
      text.append(name.textValue()).append(": ");
    }
    if (m.contentSpan != null) {
      Span s = m.contentSpan;
      text.append(JsonStrings.decode(b.bytes, s.start, s.end));
    } else {
      appendContent(text, m.content, at + ".content");
    }
    JsonNode toolCalls = m.toolCalls;
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
    JsonNode functionCall = m.functionCall;
    if (!isAbsent(functionCall)) {
      appendFunctionCall(text, functionCall, at + ".function_call");
    }
    return PromptSegment.text(role.textValue(), text.toString());
  }

  private static PromptSegment completionPrompt(Body b, JsonNode prompt)
      throws InvalidRequestException {
    if (isAbsent(prompt)) {
      throw new InvalidRequestException(
          "prompt: missing (expected: " + PROMPT_SHAPES + ")", "prompt");
    }
    return promptOf(b, prompt, "prompt", PROMPT_SHAPES);
  }

  private static PromptSegment generatePrompt(Body b, JsonNode root)
      throws InvalidRequestException {
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
      return promptOf(b, text, "text", "a string or a list of strings");
    }
    if (!isAbsent(ids)) {
      if (!ids.isArray() || (!ids.isEmpty() && ids.get(0).isTextual())) {
        throw wrongType("input_ids", "a list of token ids or a list of token-id lists", ids);
      }
      return promptOf(b, ids, "input_ids", "a list of token ids or a list of token-id lists");
    }
    throw new InvalidRequestException(
        "text: missing (expected: text or input_ids)", "text");
  }

  /** A prompt (see {@link RequestShapes#promptOf}); a string is the streamed {@link Body#prompt} when there is one. */
  private static PromptSegment promptOf(Body b, JsonNode prompt, String at, String shapes)
      throws InvalidRequestException {
    return RequestShapes.promptOf(prompt, at, shapes,
        t -> b.prompt != null ? segment(b, null, b.prompt) : PromptSegment.text(null, t.textValue()));
  }

  private String sessionKey(JsonNode root, Function<String, String> header) throws InvalidRequestException {
    return sessionKeyOf(root, header, sessionHeader, sessionFieldPath, sessionField);
  }
}
