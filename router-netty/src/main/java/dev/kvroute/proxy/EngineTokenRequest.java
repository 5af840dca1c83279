package dev.kvroute.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.LaxBoolean;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.request.TextHash;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/**
 * What the router asks an engine's {@code POST /tokenize} for one request, and the keys under which
 * the answer is cached: vLLM's {@code TokenizeChatRequest} for a chat request ({@code model},
 * {@code messages}, and the request's own {@code add_generation_prompt}, {@code continue_final_message},
 * {@code add_special_tokens}, {@code chat_template}, {@code chat_template_kwargs}, {@code tools},
 * {@code documents} and {@code mm_processor_kwargs}, copied byte for byte when present, so the engine
 * renders exactly what it will render for the request itself), or {@code TokenizeCompletionRequest}
 * ({@code model}, {@code prompt}, {@code add_special_tokens}) for a completion whose {@code prompt} is
 * one string and for SGLang's {@code /generate} with one {@code text} string (SGLang's {@code /tokenize}
 * takes the same {@code prompt} shape).
 *
 * <p>Keys. {@code prefixKeys[i]} identifies the conversation made of the first {@code i + 1} messages
 * under the same model, endpoint and rendering fields: a chain of {@link TextHash}es, {@code c_0 =
 * H(model, endpoint, the rendering fields' bytes)}, {@code c_{i+1} = H(c_i, H(message i's bytes))}, so
 * two requests share {@code prefixKeys[i]} exactly when (up to the hash's collision bound) their first
 * {@code i + 1} messages and their rendering fields are byte-identical. A completion has one key.
 *
 * <p>Immutable once built (the arrays are not copied: callers must not change them).
 *
 * @param body the JSON body for {@code POST /tokenize}
 * @param head {@code c_0}: the model, endpoint and rendering fields (what every prefix key starts from)
 * @param prefixKeys the key of each message prefix (see above); the last is the whole request's
 * @param prefixBytes the bytes of the first {@code i + 1} messages, for each {@code i}
 * @param roles each message's role: {@code system}, {@code developer}, {@code user}, {@code assistant},
 *     {@code tool}, or {@code other} for any other value (a bounded set)
 * @param chat whether the body carries {@code messages} (else {@code prompt})
 */
record EngineTokenRequest(byte[] body, TextHash head, TextHash[] prefixKeys, long[] prefixBytes, String[] roles,
    boolean chat) {
  private static final JsonFactory JSON = new JsonFactory();
  private static final ObjectMapper JSON_TREE = new ObjectMapper();
  private static final byte[] TRUE = "true".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] FALSE = "false".getBytes(StandardCharsets.US_ASCII);

  /** The fields of a chat request that change how the engine renders its messages. */
  private static final List<String> CHAT_FIELDS = List.of("add_generation_prompt", "continue_final_message",
      "add_special_tokens", "chat_template", "chat_template_kwargs", "tools", "documents", "mm_processor_kwargs");

  /** The whole request's key. */
  TextHash key() {
    return prefixKeys[prefixKeys.length - 1];
  }

  /**
   * The {@code /tokenize} request for {@code view}, or {@code null} when the engine need not or cannot
   * be asked: a view without its body, a completion prompt that is not one string (a list of prompts,
   * or token ids, which are the engine's tokens already), an SGLang {@code input_ids} request.
   *
   * @param model the model name to send (the served name), or {@code null} to leave it out
   * @throws IllegalArgumentException if the body is not the JSON object the parser accepted (a bug)
   */
  static EngineTokenRequest of(RequestView view, String model) {
    RequestView.Body b = view.body();
    if (b == null) {
      return null;
    }
    byte[] bytes = b.offset() == 0 && b.length() == b.bytes().length ? b.bytes()
        : Arrays.copyOfRange(b.bytes(), b.offset(), b.offset() + b.length());
    try {
      return view.endpoint() == Endpoint.CHAT_COMPLETIONS ? chat(bytes, model, view.endpoint())
          : completion(bytes, model, view.endpoint());
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot re-read the request body: " + e.getMessage(), e);
    }
  }

  private static EngineTokenRequest chat(byte[] bytes, String model, Endpoint endpoint) throws IOException {
    int messagesStart = -1;
    int messagesEnd = -1;
    int[] messageSpans = new int[16];
    String[] roles = new String[8];
    int messages = 0;
    ByteArrayOutputStream fields = new ByteArrayOutputStream(64);
    try (JsonParser p = JSON.createParser(bytes)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken value = p.nextToken();
        int start = (int) p.currentTokenLocation().getByteOffset();
        if (name.equals("messages") && value == JsonToken.START_ARRAY) {
          messagesStart = start;
          JsonToken t;
          while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            if (t == null) {
              throw new IOException("unexpected end of messages");
            }
            int ms = (int) p.currentTokenLocation().getByteOffset();
            String role = "other";
            if (t == JsonToken.START_OBJECT) {
              while (p.nextToken() == JsonToken.FIELD_NAME) {
                boolean isRole = p.currentName().equals("role");
                JsonToken v = p.nextToken();
                if (isRole && v == JsonToken.VALUE_STRING) {
                  role = role(p.getText());
                } else {
                  p.skipChildren();
                }
              }
            } else {
              p.skipChildren();
              p.finishToken();
            }
            int me = (int) p.currentLocation().getByteOffset();
            if (messages == roles.length) {
              roles = Arrays.copyOf(roles, roles.length * 2);
            }
            roles[messages] = role;
            if (2 * messages + 2 > messageSpans.length) {
              messageSpans = Arrays.copyOf(messageSpans, messageSpans.length * 2);
            }
            messageSpans[2 * messages] = ms;
            messageSpans[2 * messages + 1] = me;
            messages++;
          }
          messagesEnd = (int) p.currentLocation().getByteOffset();
          continue;
        }
        p.skipChildren();
        p.finishToken(); // a string's end is known only once it is read
        int end = (int) p.currentLocation().getByteOffset();
        if (CHAT_FIELDS.contains(name) && value != JsonToken.VALUE_NULL) {
          fields.write(',');
          fields.write('"');
          fields.write(name.getBytes(StandardCharsets.UTF_8));
          fields.write('"');
          fields.write(':');
          fields.write(bytes, start, end - start);
        }
      }
    }
    if (messagesStart < 0 || messages == 0) {
      throw new IOException("no messages");
    }
    byte[] rendering = fields.toByteArray();
    ByteArrayOutputStream out = new ByteArrayOutputStream(messagesEnd - messagesStart + rendering.length + 64);
    out.write('{');
    writeModel(out, model);
    out.write("\"messages\":".getBytes(StandardCharsets.UTF_8));
    out.write(bytes, messagesStart, messagesEnd - messagesStart);
    out.write(rendering);
    out.write('}');
    TextHash[] keys = new TextHash[messages];
    long[] sizes = new long[messages];
    TextHash head = head(model, endpoint, rendering);
    TextHash chain = head;
    long total = 0;
    for (int i = 0; i < messages; i++) {
      int s = messageSpans[2 * i];
      int e = messageSpans[2 * i + 1];
      chain = link(chain, TextHash.ofUtf8(bytes, s, e - s));
      keys[i] = chain;
      total += e - s;
      sizes[i] = total;
    }
    return new EngineTokenRequest(out.toByteArray(), head, keys, sizes, Arrays.copyOf(roles, messages), true);
  }

  private static EngineTokenRequest completion(byte[] bytes, String model, Endpoint endpoint) throws IOException {
    String promptField = endpoint == Endpoint.SGLANG_GENERATE ? "text" : "prompt";
    int promptStart = -1;
    int promptEnd = -1;
    byte[] special = null;
    try (JsonParser p = JSON.createParser(bytes)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken value = p.nextToken();
        int start = (int) p.currentTokenLocation().getByteOffset();
        p.skipChildren();
        p.finishToken(); // a string's end is known only once it is read
        int end = (int) p.currentLocation().getByteOffset();
        if (name.equals(promptField)) {
          if (value != JsonToken.VALUE_STRING) {
            return null; // a list of prompts or token ids: not one tokenize call
          }
          promptStart = start;
          promptEnd = end;
        } else if (name.equals("add_special_tokens") && value != JsonToken.VALUE_NULL) {
          // as the engine reads it (pydantic's lax bool: "yes", 1): its canonical literal, or left out
          LaxBoolean.Result lax = value.isScalarValue()
              ? LaxBoolean.of(JSON_TREE.readTree(Arrays.copyOfRange(bytes, start, end))) : null;
          special = lax != null && lax.ok() ? (lax.value() ? TRUE : FALSE) : null;
        }
      }
    }
    if (promptStart < 0) {
      return null; // SGLang input_ids
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(promptEnd - promptStart + 64);
    out.write('{');
    writeModel(out, model);
    out.write("\"prompt\":".getBytes(StandardCharsets.UTF_8));
    out.write(bytes, promptStart, promptEnd - promptStart);
    byte[] rendering = special == null ? new byte[0] : special;
    if (special != null) {
      out.write(",\"add_special_tokens\":".getBytes(StandardCharsets.UTF_8));
      out.write(special);
    }
    out.write('}');
    TextHash head = head(model, endpoint, rendering);
    TextHash key = link(head, TextHash.ofUtf8(bytes, promptStart, promptEnd - promptStart));
    return new EngineTokenRequest(out.toByteArray(), head, new TextHash[] {key}, new long[] {promptEnd - promptStart},
        new String[0], false);
  }

  private static String role(String role) {
    return switch (role) {
      case "system", "developer", "user", "assistant", "tool" -> role;
      default -> "other";
    };
  }

  private static void writeModel(ByteArrayOutputStream out, String model) throws IOException {
    if (model != null) {
      out.write("\"model\":".getBytes(StandardCharsets.UTF_8));
      out.write(quoted(model));
      out.write(',');
    }
  }

  private static byte[] quoted(String s) {
    StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString().getBytes(StandardCharsets.UTF_8);
  }

  /** The chain's start: the model, the endpoint and the rendering fields' bytes. */
  private static TextHash head(String model, Endpoint endpoint, byte[] rendering) {
    byte[] m = (model == null ? "" : model).getBytes(StandardCharsets.UTF_8);
    ByteBuffer buf = ByteBuffer.allocate(8 + m.length + rendering.length);
    buf.putInt(endpoint.ordinal()).putInt(m.length).put(m).put(rendering);
    return TextHash.ofUtf8(buf.array(), 0, buf.capacity());
  }

  /** The next link: the hash of the previous link and the message's hash (32 bytes). */
  private static TextHash link(TextHash previous, TextHash message) {
    ByteBuffer buf = ByteBuffer.allocate(32);
    buf.putLong(previous.high()).putLong(previous.low()).putLong(message.high()).putLong(message.low());
    return TextHash.ofUtf8(buf.array(), 0, 32);
  }
}
