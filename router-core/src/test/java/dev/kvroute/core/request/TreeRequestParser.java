package dev.kvroute.core.request;

import static dev.kvroute.core.request.RequestShapes.*;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
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
    if (endpoint != Endpoint.SGLANG_GENERATE) {
      checkPriorityAndN(root);
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

  private static PromptSegment promptOf(JsonNode prompt, String at, String shapes)
      throws InvalidRequestException {
    return RequestShapes.promptOf(prompt, at, shapes, t -> PromptSegment.text(null, t.textValue()));
  }

  private String sessionKey(JsonNode root, Function<String, String> header) throws InvalidRequestException {
    return sessionKeyOf(root, header, sessionHeader, sessionFieldPath, sessionField);
  }
}
