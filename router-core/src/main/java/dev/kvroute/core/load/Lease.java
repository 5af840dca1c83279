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
}
