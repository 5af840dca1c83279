package dev.kvroute.bench.load;

import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpHeaders;
import java.io.IOException;
import java.util.Map;

/**
 * Receives one streamed completion for a load driver: feeds its server-sent events to a {@link
 * ChatStreamReader}, keeps the {@code x-kvroute-backend} response header, and at the end tells its
 * {@link Outcome} whether the stream was complete (no unreadable or error event, {@code [DONE]}, some
 * content and a usage chunk) or what was wrong with it.
 *
 * <p>When the whole text is not wanted, the events after the first content are parsed only if they may
 * carry the usage chunk, an error or the end ({@link #needed}); the others each carry one token of
 * text, and the reader's text then stops at the first token.
 *
 * <p>Not thread-safe: one per response, called on the HTTP client's event loop.
 */
final class StreamedReply implements StreamingHttpClient.ResponseListener {
  /** What became of one request; exactly one method is called, once, on the HTTP client's event loop. */
  interface Outcome {
    /**
     * The stream was complete.
     *
     * @param reader the stream's events
     * @param sentNanos wall time ({@link System#nanoTime()}) just before the request was written
     * @param backend the {@code x-kvroute-backend} response header, or {@code null}
     */
    void completed(ChatStreamReader reader, long sentNanos, String backend);

    /** The exchange failed or the stream was incomplete; {@code problem} says how. */
    void failed(String problem);

    /**
     * The server answered a non-2xx status; by default a failure.
     *
     * @param retryAfter whether the response carried {@code Retry-After}
     * @param message the status and the start of the body
     */
    default void refused(int status, boolean retryAfter, String message) {
      failed(message);
    }
  }

  private final ChatStreamReader reader;
  private final long sentNanos;
  private final boolean wholeText;
  private final Outcome outcome;
  private final SseParser sse = new SseParser(this::onData);
  private String backend;
  private IOException bad;

  /**
   * A listener for a request sent at {@code sentNanos}; {@link #post} makes one.
   *
   * @param wholeText as for {@link #post}
   */
  StreamedReply(ChatStreamReader reader, long sentNanos, boolean wholeText, Outcome outcome) {
    this.reader = reader;
    this.sentNanos = sentNanos;
    this.wholeText = wholeText;
    this.outcome = outcome;
  }

  /**
   * Posts {@code body} to {@code path} with {@code client} and reports the streamed reply to {@code
   * outcome}; its send time is taken just before the request is handed to the client.
   *
   * @param wholeText whether every event is parsed (the reader keeps the reply's whole text) or, after
   *     the first content, only those {@link #needed} for the outcome
   */
  static void post(
      StreamingHttpClient client,
      String path,
      Map<String, String> headers,
      byte[] body,
      boolean wholeText,
      Outcome outcome) {
    ChatStreamReader reader = new ChatStreamReader();
    long sentNanos = System.nanoTime();
    client.post(path, headers, body, new StreamedReply(reader, sentNanos, wholeText, outcome));
  }

  /**
   * Whether an event after the first token must be parsed: the usage chunk, an error, or the end. The
   * other chunks each carry one token of text.
   */
  static boolean needed(String data) {
    return data.contains("\"usage\"") || data.contains("\"error\"") || data.startsWith("[DONE]");
  }

  private void onData(String data) {
    if (bad != null || (!wholeText && reader.firstContentNanos() >= 0 && !needed(data))) {
      return;
    }
    try {
      reader.onData(data, System.nanoTime());
    } catch (IOException e) {
      bad = e;
    }
  }

  @Override
  public void onHeaders(int status, HttpHeaders headers) {
    backend = headers.get("x-kvroute-backend");
  }

  @Override
  public void onBody(ByteBuf chunk) {
    sse.feed(chunk);
  }

  @Override
  public void onEnd() {
    sse.finish();
    String problem =
        bad != null ? "unreadable event: " + bad.getMessage()
            : reader.error() != null ? "error event: " + reader.error()
            : !reader.done() ? "stream ended without [DONE]"
            : reader.firstContentNanos() < 0 ? "no content"
            : reader.promptTokens() < 0 ? "no usage chunk (stream_options.include_usage ignored?)"
            : null;
    if (problem != null) {
      outcome.failed(problem);
    } else {
      outcome.completed(reader, sentNanos, backend);
    }
  }

  @Override
  public void onError(Throwable cause) {
    if (cause instanceof StreamingHttpClient.StatusException s) {
      outcome.refused(s.status(), s.retryAfter() != null, s.getMessage());
      return;
    }
    outcome.failed(cause.getMessage());
  }
}
