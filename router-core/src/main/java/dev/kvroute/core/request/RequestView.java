package dev.kvroute.core.request;

import java.util.List;

/**
 * The routing view of one generation request, extracted without rewriting the body: the router
 * forwards the original bytes and uses this only to decide where they go.
 *
 * <p>Immutable and thread-safe.
 *
 * @param endpoint which API the body belongs to
 * @param model the {@code model} field, or {@code null} when absent
 * @param sessionKey the session key (configured header, else the {@code user} field), or {@code null}
 * @param segments the prompt in order; never empty
 * @param stream whether the client asked for a streamed (SSE) response
 * @param maxTokens the requested output length ({@code max_completion_tokens}, else {@code max_tokens},
 *     SGLang {@code sampling_params.max_new_tokens}), or {@code -1} when absent
 */
public record RequestView(
    Endpoint endpoint,
    String model,
    String sessionKey,
    List<PromptSegment> segments,
    boolean stream,
    int maxTokens) {
  public RequestView {
    segments = List.copyOf(segments);
    if (segments.isEmpty()) {
      throw new IllegalArgumentException("segments: empty (expected: at least one prompt segment)");
    }
  }
}
