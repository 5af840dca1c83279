package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * Upstream timeouts. None of them limits the total length of a response, so a healthy long stream
 * is never cut.
 *
 * <p>Immutable and thread-safe.
 *
 * @param connect TCP connect to a backend; a timeout counts as a connection failure (retryable)
 * @param firstByte from the request written upstream to the response status line; covers queueing
 *     and prefill of a non-streamed request, so keep it generous; a timeout is retryable (nothing has
 *     reached the client yet) and answered 504 when no retry is left
 * @param idle between two reads from the backend once the response has started; counted only while
 *     the router is waiting for the backend, never while the client is slow to read
 */
public record TimeoutConfig(Duration connect, Duration firstByte, Duration idle) {
  public TimeoutConfig {
    Checks.positive("connect", connect);
    Checks.positive("firstByte", firstByte);
    Checks.positive("idle", idle);
  }

  /** connect 3s, firstByte 300s, idle 120s. */
  public static TimeoutConfig defaults() {
    return new TimeoutConfig(Duration.ofSeconds(3), Duration.ofSeconds(300), Duration.ofSeconds(120));
  }
}
