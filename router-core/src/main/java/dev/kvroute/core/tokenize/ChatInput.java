package dev.kvroute.core.tokenize;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.LaxBoolean;
import dev.kvroute.core.request.PromptSegment;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a chat template renders: the variables vLLM hands to {@code apply_chat_template} for one
 * {@code /v1/chat/completions} request.
 *
 * <p>Built from a request body the way vLLM's {@code chat_utils} prepares it: each message becomes
 * {@code {"role", "content"}} plus {@code name}, {@code tool_calls} (assistant), {@code
 * tool_call_id} (tool) and {@code reasoning_content} when present; a {@code null} content becomes
 * {@code ""}; for a template that takes content as a string (vLLM's {@code "string"} content format,
 * the one every template that concatenates {@code message.content} uses) an array of content parts
 * becomes its text parts joined with {@code "\n"} (non-text parts are dropped: vLLM inserts a
 * model-specific placeholder there, which the router does not know), else the parts stay a list of
 * {@code {"type":"text","text":...}}; a tool call's {@code arguments} given as a JSON string is
 * parsed into an object (vLLM's {@code _postprocess_messages}); each tool becomes
 * {@code {"type", "function": {"name", "description", "parameters", ...}}} with absent fields
 * {@code null}, as pydantic's {@code model_dump} of vLLM's tool model gives them. {@code
 * add_generation_prompt} defaults to true, {@code continue_final_message} to false, and the
 * request's {@code chat_template_kwargs} are merged over these last (as vLLM does).
 *
 * <p>Values are plain Java collections ({@code LinkedHashMap}, {@code ArrayList}, {@code String},
 * numbers, {@code Boolean}, {@code null}), in the body's order. Immutable once built (callers must
 * not modify the collections); thread-safe.
 *
 * @param messages the messages, in order; never empty
 * @param tools the tools, or {@code null} when the request has none
 * @param documents the {@code documents} field, or {@code null}
 * @param addGenerationPrompt whether the template appends the assistant's header
 * @param continueFinalMessage whether the prompt ends inside the final (assistant) message
 * @param kwargs the request's {@code chat_template_kwargs} (empty when absent)
 */
public record ChatInput(
    List<Map<String, Object>> messages,
    List<Object> tools,
    Object documents,
    boolean addGenerationPrompt,
    boolean continueFinalMessage,
    Map<String, Object> kwargs) {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  public ChatInput {
    if (messages == null || messages.isEmpty()) {
      throw new IllegalArgumentException("messages: empty (expected: at least one message)");
    }
    kwargs = kwargs == null ? Map.of() : kwargs;
  }

  /**
   * The template input of a chat request body, prepared as described in the type's documentation.
   *
   * @param stringContent whether the template takes content as a string (vLLM's content format)
   * @throws InvalidRequestException if the body is not a JSON object with a non-empty
   *     {@code messages} array of objects, or a tool call's {@code arguments} string is not JSON
   */
  public static ChatInput fromBody(byte[] body, int offset, int length, boolean stringContent)
      throws InvalidRequestException {
    JsonNode root;
    try {
      root = MAPPER.readTree(body, offset, length);
    } catch (IOException e) {
      throw new InvalidRequestException("body: not valid JSON (" + e.getMessage() + ")", null);
    }
    if (!(root instanceof ObjectNode)) {
      throw new InvalidRequestException("body: expected a JSON object", null);
    }
    JsonNode msgs = root.get("messages");
    if (msgs == null || !msgs.isArray() || msgs.isEmpty()) {
      throw new InvalidRequestException("messages: expected a non-empty array", "messages");
    }
    List<Map<String, Object>> messages = new ArrayList<>(msgs.size());
    for (int i = 0; i < msgs.size(); i++) {
      messages.add(message(msgs.get(i), i, stringContent));
    }
    List<Object> tools = null;
    JsonNode t = root.get("tools");
    if (t != null && t.isArray()) {
      tools = new ArrayList<>(t.size());
      for (JsonNode tool : t) {
        tools.add(tool(tool));
      }
    }
    JsonNode docs = root.get("documents");
    Map<String, Object> kwargs = new LinkedHashMap<>();
    JsonNode k = root.get("chat_template_kwargs");
    if (k != null && k.isObject()) {
      kwargs = plainMap(k);
    }
    return new ChatInput(
        messages,
        tools,
        docs == null || docs.isNull() ? null : plain(docs),
        flag(root, "add_generation_prompt", true),
        flag(root, "continue_final_message", false),
        kwargs);
  }

  /**
   * The template input of already parsed prompt segments: one {@code {"role", "content"}} message
   * per segment (role {@code user} when absent), as for a request whose messages carry plain string
   * content and nothing else.
   *
   * @throws IllegalArgumentException if a segment is given as token ids
   */
  public static ChatInput fromSegments(List<PromptSegment> segments) {
    List<Map<String, Object>> messages = new ArrayList<>(segments.size());
    for (PromptSegment s : segments) {
      if (s.isTokens()) {
        throw new IllegalArgumentException("segments: token ids cannot be rendered by a chat template");
      }
      Map<String, Object> m = new LinkedHashMap<>(4);
      m.put("role", s.role() == null ? "user" : s.role());
      m.put("content", s.text());
      messages.add(m);
    }
    return new ChatInput(messages, null, null, true, false, Map.of());
  }

  /**
   * A {@code bool} rendering field as vLLM's request model reads it ({@link LaxBoolean}: {@code
   * "yes"} and {@code 1} are true); absent or null is {@code absent} (the engine judges a null).
   */
  private static boolean flag(JsonNode root, String field, boolean absent) throws InvalidRequestException {
    JsonNode v = root.get(field);
    if (v == null || v.isNull()) {
      return absent;
    }
    LaxBoolean.Result r = LaxBoolean.of(v);
    if (!r.ok()) {
      throw new InvalidRequestException(LaxBoolean.refusal(field, v, r.failure()), field);
    }
    return r.value();
  }

  private static Map<String, Object> message(JsonNode m, int index, boolean stringContent)
      throws InvalidRequestException {
    if (!m.isObject()) {
      throw new InvalidRequestException(
          "messages." + index + ": expected an object", "messages." + index);
    }
    Map<String, Object> out = new LinkedHashMap<>(8);
    JsonNode role = m.get("role");
    out.put("role", role == null || role.isNull() ? null : plain(role));
    out.put("content", content(m.get("content"), stringContent));
    JsonNode name = m.get("name");
    if (name != null && !name.isNull()) {
      out.put("name", plain(name));
    }
    JsonNode calls = m.get("tool_calls");
    if (calls != null && !calls.isNull() && "assistant".equals(out.get("role"))) {
      Object plainCalls = plain(calls);
      if (plainCalls instanceof List<?> list) {
        for (Object call : list) {
          parseArguments(call, index);
        }
      }
      out.put("tool_calls", plainCalls);
    }
    JsonNode callId = m.get("tool_call_id");
    if (callId != null && !callId.isNull() && "tool".equals(out.get("role"))) {
      out.put("tool_call_id", plain(callId));
    }
    JsonNode reasoning = m.get("reasoning_content");
    if (reasoning != null && !reasoning.isNull()) {
      out.put("reasoning_content", plain(reasoning));
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  private static void parseArguments(Object call, int index) throws InvalidRequestException {
    if (!(call instanceof Map<?, ?> c) || !(c.get("function") instanceof Map<?, ?> f)) {
      return;
    }
    if (f.get("arguments") instanceof String args) {
      try {
        ((Map<String, Object>) f).put("arguments", plain(MAPPER.readTree(args)));
      } catch (IOException e) {
        throw new InvalidRequestException(
            "messages." + index + ".tool_calls: arguments is not valid JSON (" + e.getMessage() + ")",
            "messages." + index + ".tool_calls");
      }
    }
  }

  private static Object content(JsonNode content, boolean stringContent) {
    if (content == null || content.isNull()) {
      return "";
    }
    if (content.isTextual()) {
      return content.textValue();
    }
    if (!content.isArray()) {
      return plain(content);
    }
    List<String> texts = new ArrayList<>(content.size());
    for (JsonNode part : content) {
      if (part.isTextual()) {
        texts.add(part.textValue());
      } else if (part.isObject()) {
        JsonNode text = part.get("text");
        String type = part.path("type").asText("text");
        if (text != null && text.isTextual() && (type.equals("text") || type.equals("input_text"))) {
          texts.add(text.textValue());
        } else if (type.equals("refusal") && part.path("refusal").isTextual()) {
          texts.add(part.get("refusal").textValue());
        }
      }
    }
    if (stringContent) {
      return String.join("\n", texts);
    }
    List<Object> parts = new ArrayList<>(texts.size());
    for (String text : texts) {
      Map<String, Object> p = new LinkedHashMap<>(2);
      p.put("type", "text");
      p.put("text", text);
      parts.add(p);
    }
    return parts;
  }

  private static Object tool(JsonNode tool) {
    if (!tool.isObject()) {
      return plain(tool);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("type", tool.has("type") ? plain(tool.get("type")) : "function");
    JsonNode fn = tool.get("function");
    if (fn != null && fn.isObject()) {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("name", fn.has("name") ? plain(fn.get("name")) : null);
      f.put("description", fn.has("description") ? plain(fn.get("description")) : null);
      f.put("parameters", fn.has("parameters") ? plain(fn.get("parameters")) : null);
      for (Iterator<Map.Entry<String, JsonNode>> it = fn.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        f.putIfAbsent(e.getKey(), plain(e.getValue()));
      }
      out.put("function", f);
    } else {
      out.put("function", fn == null ? null : plain(fn));
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = tool.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      out.putIfAbsent(e.getKey(), plain(e.getValue()));
    }
    return out;
  }

  private static Map<String, Object> plainMap(JsonNode node) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> e = it.next();
      out.put(e.getKey(), plain(e.getValue()));
    }
    return out;
  }

  /** A JSON value as plain Java: maps keep their key order; integers stay integers. */
  static Object plain(JsonNode node) {
    switch (node.getNodeType()) {
      case OBJECT:
        return plainMap(node);
      case ARRAY: {
        List<Object> out = new ArrayList<>(node.size());
        for (JsonNode v : node) {
          out.add(plain(v));
        }
        return out;
      }
      case STRING:
        return node.textValue();
      case BOOLEAN:
        return node.booleanValue();
      case NUMBER:
        if (node.isIntegralNumber()) {
          return node.canConvertToLong() ? (Object) node.longValue() : node.bigIntegerValue();
        }
        return node.doubleValue();
      default:
        return null;
    }
  }
}
