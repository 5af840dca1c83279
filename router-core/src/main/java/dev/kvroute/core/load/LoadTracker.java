package dev.kvroute.core.load;

import dev.kvroute.core.BackendId;

/**
 * Per-backend in-flight load as seen by the router: requests, prefill tokens not yet past their first
 * token, and active decodes; and, when fed with the engines' own gauges, the load on each engine that
 * this router did not send (see {@link #reportEngine}).
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

  /**
   * Feeds what {@code backend}'s engine reported of its own load, so that requests this router did
   * not send (another router replica, direct clients) count in {@link #load}: the foreign requests
   * are the engine's running plus waiting minus this router's in-flight requests, the foreign
   * waiting are its waiting minus this router's requests not yet past their first token, both at
   * least 0. This router's counts are taken as the larger of {@code ownWhenAsked} (its {@link #load}
   * when the scrape was sent) and its counts now, so that a request that finished or started while
   * the scrape was in flight is never mistaken for a foreign one. The report stands until the next
   * one or {@link #clearEngine}.
   */
  void reportEngine(BackendId backend, EngineLoad engine, BackendLoad ownWhenAsked);

  /** Drops {@code backend}'s engine report (its scrape failed): no foreign load, KV usage unknown. */
  void clearEngine(BackendId backend);

  /** Forgets {@code backend}; live leases on it still release safely. */
  void remove(BackendId backend);

  /** A lock-free tracker on per-backend atomic counters; backends appear on first use. */
  static LoadTracker create() {
    return new DefaultLoadTracker();
  }
}
