package dev.kvroute.bench.workload;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The chat request of one turn, in the two forms the bench needs: the JSON body the load driver
 * sends, and the {@link RequestView} the router builds from that body, which the simulator routes
 * directly. Both carry the same messages, session key and reply length, so the router, the engines
 * and the simulator tokenize the same prompt.
 *
 * <p>The body is a streaming chat completion with {@code max_tokens} and {@code ignore_eos} (the
 * reply is exactly {@code max_tokens} long), {@code stream_options.include_usage} (the usage chunk
 * carries {@code prompt_tokens_details.cached_tokens}), the session key as {@code user}, and a
 * per-request {@code seed}. The session key also goes in the {@value #SESSION_HEADER} header.
 *
 * <p>Thread-safe (stateless).
 */
public final class ChatRequests {
  /** The header carrying the session key (router-core's default session header). */
  public static final String SESSION_HEADER = "x-session-id";

  private static final JsonFactory JSON = new JsonFactory();

  private ChatRequests() {}

  /** The routing view the router extracts from {@link #body}'s output. */
  public static RequestView view(String model, String sessionKey, List<ChatMessage> messages, int maxTokens) {
    List<PromptSegment> segments = new ArrayList<>(messages.size());
    for (ChatMessage m : messages) {
      segments.add(PromptSegment.text(m.role(), m.content()));
    }
    return viewOfSegments(model, sessionKey, segments, maxTokens);
  }

  /** As {@link #view} for messages already turned into segments ({@link Conversation#nextRequestSegments()}). */
  public static RequestView viewOfSegments(
      String model, String sessionKey, List<PromptSegment> segments, int maxTokens) {
    return new RequestView(Endpoint.CHAT_COMPLETIONS, model, sessionKey, segments, true, maxTokens);
  }

  /** Counts prompt tokens of chat messages with {@code tokenizer}, as the router and engines do. */
  public static PromptCounter counter(PromptTokenizer tokenizer) {
    return messages -> {
      List<PromptSegment> segments = new ArrayList<>(messages.size());
      for (ChatMessage m : messages) {
        segments.add(PromptSegment.text(m.role(), m.content()));
      }
      return tokenizer.tokenize(Endpoint.CHAT_COMPLETIONS, segments).length;
    };
  }

  /** The UTF-8 JSON body of a streaming chat request for one turn. */
  public static byte[] body(
      String model, String sessionKey, List<ChatMessage> messages, int maxTokens, long seed) {
    int size = 256;
    for (ChatMessage m : messages) {
      size += m.content().length() + 48;
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(size);
    try (JsonGenerator g = JSON.createGenerator(out, JsonEncoding.UTF8)) {
      g.writeStartObject();
      g.writeStringField("model", model);
      g.writeArrayFieldStart("messages");
      for (ChatMessage m : messages) {
        g.writeStartObject();
        g.writeStringField("role", m.role());
        g.writeStringField("content", m.content());
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeNumberField("max_tokens", maxTokens);
      g.writeBooleanField("ignore_eos", true);
      g.writeBooleanField("stream", true);
      g.writeObjectFieldStart("stream_options");
      g.writeBooleanField("include_usage", true);
      g.writeEndObject();
      g.writeStringField("user", sessionKey);
      g.writeNumberField("seed", seed);
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }
}
