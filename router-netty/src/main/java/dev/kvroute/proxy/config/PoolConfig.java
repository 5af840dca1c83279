package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * Upstream connection pools: one per backend per event loop, so a request's upstream connection lives
 * on its client connection's thread.
 *
 * <p>Immutable and thread-safe.
 *
 * @param idleTimeout a pooled connection unused this long is closed. Keep it below the backends'
 *     keep-alive timeout (uvicorn, under vLLM and SGLang: 5s), so the router closes first and rarely
 *     picks a connection the backend is closing. Default 4s
 * @param maxIdlePerBackend idle connections kept per backend per event loop; more are closed on
 *     release. Default 64
 */
public record PoolConfig(Duration idleTimeout, int maxIdlePerBackend) {
  public PoolConfig {
    Checks.positive("idleTimeout", idleTimeout);
    Checks.nonNegative("maxIdlePerBackend", maxIdlePerBackend);
  }

  public static PoolConfig defaults() {
    return new PoolConfig(Duration.ofSeconds(4), 64);
  }
}
