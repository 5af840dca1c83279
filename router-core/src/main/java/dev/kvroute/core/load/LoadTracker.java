package dev.kvroute.core.load;

import dev.kvroute.core.BackendId;

/**
 * Per-backend in-flight load as seen by the router: requests, prefill tokens not yet past their first
 * token, and active decodes; optionally the engine's own queue length and KV usage.
 *
 * <p>Thread-safe.
 */
public interface LoadTracker {
  /**
   * Counts a new request on {@code backend}.
   *
   * @param uncachedPromptTokens prompt tokens the backend is expected to prefill (prompt minus the
   *     predicted cached prefix)
   */
  Lease acquire(BackendId backend, long uncachedPromptTokens);

  /** The current load of {@code backend}; {@link BackendLoad#IDLE} for an unknown backend. */
  BackendLoad load(BackendId backend);

  /** Feeds engine-reported load (from scraping {@code /metrics}); pass {@code -1} for unknown. */
  void reportExternal(BackendId backend, int queueLength, double kvUsage);

  /** Forgets {@code backend}; live leases on it still release safely. */
  void remove(BackendId backend);

  /** A lock-free tracker on per-backend atomic counters; backends appear on first use. */
  static LoadTracker create() {
    return new DefaultLoadTracker();
  }
}
