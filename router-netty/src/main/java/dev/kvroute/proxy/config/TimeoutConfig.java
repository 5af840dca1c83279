package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * Upstream and client timeouts, and the graceful shutdown's limit. None of them limits the total
 * length of a response, so a healthy long stream is never cut (except by a shutdown that outlasts
 * {@code drain}).
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
 * @param drain on shutdown (SIGTERM to {@code kvroute serve}), the longest wait for requests in
 *     progress to be answered after the router stops accepting connections; what is left is then
 *     aborted. 30 s, Kubernetes' default termination grace period (keep it below the pod's)
 */
public record TimeoutConfig(Duration connect, Duration firstByte, Duration idle, Duration client, Duration drain) {
  /** The default {@code drain}: 30 s. */
  public static final Duration DEFAULT_DRAIN = Duration.ofSeconds(30);

  public TimeoutConfig {
    Checks.positive("connect", connect);
    Checks.positive("firstByte", firstByte);
    Checks.positive("idle", idle);
    Checks.positive("client", client);
    Checks.positive("drain", drain);
  }

  /** As the canonical constructor with the default {@code drain}. */
  public TimeoutConfig(Duration connect, Duration firstByte, Duration idle, Duration client) {
    this(connect, firstByte, idle, client, DEFAULT_DRAIN);
  }

  /** connect 3s, firstByte 300s, idle 120s, client 60s, drain 30s. */
  public static TimeoutConfig defaults() {
    return new TimeoutConfig(
        Duration.ofSeconds(3), Duration.ofSeconds(300), Duration.ofSeconds(120), Duration.ofSeconds(60));
  }
}
