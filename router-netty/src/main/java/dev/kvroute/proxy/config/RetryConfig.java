package dev.kvroute.proxy.config;

/**
 * Retries of a request on another backend. A retry happens only before any response byte has reached
 * the client, only to a backend not yet tried for this request, and only after a connection failure,
 * a connect or first-byte timeout, a connection closed before the response, or a 502/503 answer;
 * never after a 4xx. A pooled connection that turns out stale (fails before any response byte) is
 * retried once on a fresh connection to the same backend, which does not count as a retry.
 *
 * <p>Immutable and thread-safe.
 *
 * @param maxRetries retries after the first attempt; {@code 0} disables retries. Default 2
 */
public record RetryConfig(int maxRetries) {
  public RetryConfig {
    Checks.range("maxRetries", maxRetries, 0, 16);
  }

  public static RetryConfig defaults() {
    return new RetryConfig(2);
  }
}
