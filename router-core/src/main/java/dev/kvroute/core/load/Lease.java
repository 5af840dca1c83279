package dev.kvroute.core.load;

/**
 * One request's claim on a backend's load, taken when the request is routed. Whatever ends the
 * request (completion, error, cancel) releases it; only the first release counts.
 *
 * <p>Thread-safe: the methods may be called from any thread, any number of times.
 */
public interface Lease {
  /** Marks the request past its first token: its prefill tokens leave the backend's prefill load. */
  void firstToken();

  /** Ends the request. Idempotent: returns {@code true} only for the call that released it. */
  boolean release();

  /**
   * Ends a served request as {@link #release}, with the engine's report of the prompt tokens it found
   * cached ({@code usage.prompt_tokens_details.cached_tokens}; negative: not reported): a lease that
   * also records the prompt in an approximate prefix index corrects the backend's view with it (see
   * {@link dev.kvroute.core.index.PrefixIndex.Pin#release(int)}). Only the first call of this, {@link
   * #release} or {@link #releaseUnserved} counts; returns {@code true} for it. The default releases.
   */
  default boolean releaseReported(int engineCachedTokens) {
    return release();
  }

  /**
   * Ends a request the backend did not serve: it answered with an error status, or the request
   * failed or was cancelled before its first token. The load is released as by {@link #release};
   * a lease that also records the prompt in a prefix index takes it back (see {@link
   * dev.kvroute.core.index.PrefixIndex.Pin#abandon}). Only the first call of this or {@link #release}
   * counts; returns {@code true} for it. The default releases.
   */
  default boolean releaseUnserved() {
    return release();
  }
}
