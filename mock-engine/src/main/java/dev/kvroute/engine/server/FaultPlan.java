package dev.kvroute.engine.server;

import java.util.Locale;

/**
 * Faults injected into one generation request, for testing clients and proxies. Chosen per request by
 * the {@code X-Mock-Fault} header, else by the server's default ({@code --fault}, applied with {@code
 * --fault-probability}). A spec is a comma-separated list of:
 *
 * <ul>
 *   <li>{@code none}: no fault (a header value of {@code none} overrides the server default).
 *   <li>{@code status:N}: answer HTTP {@code N} (100..599) at once with an OpenAI-style error body
 *       {@code {"error":{"message":"mock fault: status N","type":...,"param":null,"code":N}}}; the
 *       engine does no work.
 *   <li>{@code close-before-headers}: close the connection without answering.
 *   <li>{@code close-after:K}: streaming: close the connection right after the K-th SSE event (the role
 *       chunk counts), without {@code [DONE]} or the terminating HTTP chunk; non-streaming: send the
 *       headers and the first K bytes of the body, then close. The request is aborted in the engine
 *       and counted as {@code abort}.
 *   <li>{@code stall}: send nothing and keep the connection open until the client gives up; the engine
 *       does no work.
 *   <li>{@code stall-after:K}: streaming: stop writing after the K-th SSE event and keep the
 *       connection open; the request is aborted in the engine at once (counted as {@code abort}).
 *   <li>{@code split}: streaming: write every SSE event in several writes, each flushed as its own
 *       HTTP chunk, cut after its first byte, inside the first multi-byte UTF-8 character, and between
 *       the two newlines that end it. So that every content event holds a multi-byte character, each
 *       generated word is followed by {@code "é"} (two bytes in UTF-8) in this mode; token counts are
 *       unchanged.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 *
 * @param status HTTP status to answer with, or 0
 * @param closeBeforeHeaders close without answering
 * @param closeAfterChunks close after this many SSE events (streaming) or body bytes, or -1
 * @param stall never answer
 * @param stallAfterChunks stop writing after this many SSE events, or -1
 * @param split split every SSE event into several writes
 */
public record FaultPlan(
    int status,
    boolean closeBeforeHeaders,
    int closeAfterChunks,
    boolean stall,
    int stallAfterChunks,
    boolean split) {

  /** No fault. */
  public static final FaultPlan NONE = new FaultPlan(0, false, -1, false, -1, false);

  public FaultPlan {
    if (status != 0 && (status < 100 || status > 599)) {
      throw new IllegalArgumentException("status: " + status + " (expected: 100..599)");
    }
  }

  /** Whether this plan injects anything. */
  public boolean isNone() {
    return equals(NONE);
  }

  /**
   * Parses a spec such as {@code "split,close-after:5"}.
   *
   * @throws IllegalArgumentException naming the item that is not understood
   */
  public static FaultPlan parse(String spec) {
    if (spec == null || spec.isBlank()) {
      return NONE;
    }
    int status = 0;
    boolean closeBefore = false;
    int closeAfter = -1;
    boolean stall = false;
    int stallAfter = -1;
    boolean split = false;
    for (String raw : spec.split(",")) {
      String item = raw.trim().toLowerCase(Locale.ROOT);
      int colon = item.indexOf(':');
      String name = colon < 0 ? item : item.substring(0, colon);
      String arg = colon < 0 ? null : item.substring(colon + 1).trim();
      switch (name) {
        case "", "none" -> {}
        case "status" -> status = intArg(item, arg, 100);
        case "close-before-headers" -> closeBefore = true;
        case "close-after" -> closeAfter = intArg(item, arg, 0);
        case "stall" -> stall = true;
        case "stall-after" -> stallAfter = intArg(item, arg, 0);
        case "split" -> split = true;
        default -> throw new IllegalArgumentException("fault: " + raw.trim()
            + " (expected: none, status:N, close-before-headers, close-after:K, stall, stall-after:K"
            + " or split)");
      }
    }
    return new FaultPlan(status, closeBefore, closeAfter, stall, stallAfter, split);
  }

  private static int intArg(String item, String arg, int min) {
    try {
      int v = Integer.parseInt(arg);
      if (v >= min) {
        return v;
      }
    } catch (NumberFormatException | NullPointerException e) {
      // reported below
    }
    throw new IllegalArgumentException("fault: " + item + " (expected: an integer >= " + min + ")");
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    if (status != 0) {
      sb.append(",status:").append(status);
    }
    if (closeBeforeHeaders) {
      sb.append(",close-before-headers");
    }
    if (closeAfterChunks >= 0) {
      sb.append(",close-after:").append(closeAfterChunks);
    }
    if (stall) {
      sb.append(",stall");
    }
    if (stallAfterChunks >= 0) {
      sb.append(",stall-after:").append(stallAfterChunks);
    }
    if (split) {
      sb.append(",split");
    }
    return sb.length() == 0 ? "none" : sb.substring(1);
  }
}
