package dev.kvroute.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;

/**
 * Reads the events of a streamed chat completion or completion (vLLM's framing): content deltas
 * ({@code choices[].delta.content}, or {@code choices[].text} for {@code /v1/completions}), the usage chunk
 * ({@code choices: []}, {@code usage.prompt_tokens}, {@code usage.completion_tokens},
 * {@code usage.prompt_tokens_details.cached_tokens}), an in-stream {@code error} event, and
 * {@code [DONE]}. The first content delta is the first token (the role chunk with empty content is
 * not), as in vLLM's multi-turn benchmark.
 *
 * <p>Not thread-safe: one per response.
 */
final class ChatStreamReader {
  private static final ObjectMapper JSON = new ObjectMapper();

  private final StringBuilder text = new StringBuilder();
  private long firstContentNanos = -1;
  private int promptTokens = -1;
  private int completionTokens = -1;
  private int cachedTokens = -1;
  private boolean done;
  private String error;

  /**
   * Consumes one event's data received at {@code nowNanos} (wall clock).
   *
   * @throws IOException if the data is neither JSON nor {@code [DONE]}
   */
  void onData(String data, long nowNanos) throws IOException {
    if ("[DONE]".equals(data)) {
      done = true;
      return;
    }
    JsonNode n = JSON.readTree(data);
    JsonNode err = n.get("error");
    if (err != null && !err.isNull()) {
      error = err.path("message").asText(err.toString());
      return;
    }
    JsonNode choices = n.get("choices");
    if (choices != null) {
      for (JsonNode c : choices) {
        JsonNode content = c.path("delta").get("content");
        if (content == null) {
          content = c.get("text"); // a completion's chunk
        }
        if (content != null && content.isTextual() && !content.asText().isEmpty()) {
          if (firstContentNanos < 0) {
            firstContentNanos = nowNanos;
          }
          text.append(content.asText());
        }
      }
    }
    JsonNode usage = n.get("usage");
    if (usage != null && !usage.isNull()) {
      promptTokens = usage.path("prompt_tokens").asInt(-1);
      completionTokens = usage.path("completion_tokens").asInt(-1);
      JsonNode cached = usage.path("prompt_tokens_details").get("cached_tokens");
      cachedTokens = cached == null || cached.isNull() ? -1 : cached.asInt();
    }
  }

  /** The reply text: the content deltas concatenated. */
  String text() {
    return text.toString();
  }

  /** Wall time of the first content delta, or -1. */
  long firstContentNanos() {
    return firstContentNanos;
  }

  /** {@code usage.prompt_tokens}, or -1 if no usage chunk came. */
  int promptTokens() {
    return promptTokens;
  }

  /** {@code usage.completion_tokens}, or -1. */
  int completionTokens() {
    return completionTokens;
  }

  /** {@code usage.prompt_tokens_details.cached_tokens}, or -1 when the server did not report it. */
  int cachedTokens() {
    return cachedTokens;
  }

  boolean done() {
    return done;
  }

  /** The message of an in-stream error event, or {@code null}. */
  String error() {
    return error;
  }
}
