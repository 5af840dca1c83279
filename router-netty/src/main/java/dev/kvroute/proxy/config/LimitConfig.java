package dev.kvroute.proxy.config;

/**
 * Limits on what a client may send.
 *
 * <p>Immutable and thread-safe.
 *
 * @param maxBodyBytes largest request body, counted on the bytes read (so also for chunked bodies
 *     without {@code Content-Length}); beyond it the client gets 413 and the connection is closed.
 *     Default 64 MiB
 * @param maxHeaderBytes largest request header block; beyond it the client gets 431. Default 16 KiB
 * @param maxInitialLineBytes largest request line; beyond it the client gets 414. Default 8 KiB
 */
public record LimitConfig(long maxBodyBytes, int maxHeaderBytes, int maxInitialLineBytes) {
  /** The aggregator holds bodies in one buffer, so the limit stays below 2 GiB. */
  public static final long MAX_BODY_BYTES_LIMIT = Integer.MAX_VALUE - 1024;

  public LimitConfig {
    if (maxBodyBytes <= 0 || maxBodyBytes > MAX_BODY_BYTES_LIMIT) {
      throw new IllegalArgumentException(
          "maxBodyBytes: " + maxBodyBytes + " (expected: 1.." + MAX_BODY_BYTES_LIMIT + ")");
    }
    Checks.range("maxHeaderBytes", maxHeaderBytes, 1024, 1 << 20);
    Checks.range("maxInitialLineBytes", maxInitialLineBytes, 256, 1 << 20);
  }

  /** 64 MiB bodies, 16 KiB headers, 8 KiB request line. */
  public static LimitConfig defaults() {
    return new LimitConfig(64L << 20, 16 << 10, 8 << 10);
  }
}
