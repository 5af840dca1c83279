package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * Upstream and client timeouts. None of them limits the total length of a response, so a healthy
 * long stream is never cut.
 *
 * <p>Immutable and thread-safe.
 *
 * @param connect TCP connect to a backend; a timeout counts as a connection failure (retryable)
 * @param firstByte from the request written upstream to the response status line; covers queueing
 *     and prefill of a non-streamed request, so keep it generous; a timeout is retryable (nothing has
 *     reached the client yet) and answered 504 when no retry is left
 * @param idle between two reads from the backend once the response has started; counted only while
 *     the router is waiting for the backend, never while the client is slow to read
 * @param client the longest the router waits for a client: for the next request on a connection
 *     with none in progress (a request whose body is still arriving is then answered 408 and closed;
 *     an idle keep-alive connection, or one whose request head is still arriving, is closed), and
 *     for a client to accept response bytes
 *     (a client that takes none for this long is disconnected and its upstream request aborted).
 *     Never counted while the router waits for a backend. 60 s, as nginx's {@code
 *     client_header_timeout}, {@code client_body_timeout} and {@code send_timeout}
 */
public record TimeoutConfig(Duration connect, Duration firstByte, Duration idle, Duration client) {
  public TimeoutConfig {
    Checks.positive("connect", connect);
    Checks.positive("firstByte", firstByte);
    Checks.positive("idle", idle);
    Checks.positive("client", client);
  }

  /** connect 3s, firstByte 300s, idle 120s, client 60s. */
  public static TimeoutConfig defaults() {
    return new TimeoutConfig(
        Duration.ofSeconds(3), Duration.ofSeconds(300), Duration.ofSeconds(120), Duration.ofSeconds(60));
  }
}
