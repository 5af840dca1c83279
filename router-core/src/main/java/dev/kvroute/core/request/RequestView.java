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
 * @param body the request body the view was read from (a model's chat template renders the messages
 *     from it), or {@code null} for a view built from segments; like the segments, it refers to the
 *     caller's bytes, which must stay unchanged while the view is in use
 */
public record RequestView(
    Endpoint endpoint,
    String model,
    String sessionKey,
    List<PromptSegment> segments,
    boolean stream,
    int maxTokens,
    Body body) {
  /** A view with no body (built from segments, not read from a request). */
  public RequestView(
      Endpoint endpoint, String model, String sessionKey, List<PromptSegment> segments, boolean stream,
      int maxTokens) {
    this(endpoint, model, sessionKey, segments, stream, maxTokens, null);
  }

  /**
   * {@code length} bytes of {@code bytes} from {@code offset}: a request body, not copied.
   *
   * @param messageSpans for a chat body, four offsets into {@code bytes} per message, in order: the
   *     message object's first byte and the byte after it, then its string content's first byte and
   *     the byte after it, inside the quotes ({@code -1, -1} when the content is not a plain JSON
   *     string); {@code null} when unknown. A model's chat template uses them to key its rendering
   *     cache by the messages' exact bytes.
   */
  public record Body(byte[] bytes, int offset, int length, int[] messageSpans) {
    /** A body whose message positions are unknown. */
    public Body(byte[] bytes, int offset, int length) {
      this(bytes, offset, length, null);
    }
  }

  public RequestView {
    segments = List.copyOf(segments);
    if (segments.isEmpty()) {
      throw new IllegalArgumentException("segments: empty (expected: at least one prompt segment)");
    }
  }
}
