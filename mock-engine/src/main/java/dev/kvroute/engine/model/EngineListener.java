package dev.kvroute.engine.model;

/**
 * Receives what an {@link EngineModel} does as its clock advances. Called on the thread that calls
 * {@link EngineModel#advanceTo}; implementations must not call back into the model re-entrantly.
 */
public interface EngineListener {
  /**
   * The request finished prefill and produced its first output token at {@code nowNanos} (model time).
   *
   * @param cachedTokens prompt tokens served from the prefix cache (whole blocks, at most
   *     {@code floor((prompt - 1) / blockSize) * blockSize}, vLLM's rule)
   * @param prefillNanos model time spent computing this request's prefill
   * @param queueNanos model time from arrival to the start of its prefill
   */
  void onFirstToken(long requestId, long nowNanos, int cachedTokens, long prefillNanos, long queueNanos);

  /** Output token number {@code index} (0-based; 0 is the first token) was produced at {@code nowNanos}. */
  void onToken(long requestId, long nowNanos, int index, int tokenId);

  /**
   * The request ended at {@code nowNanos}.
   *
   * @param reason {@code "length"}, {@code "stop"} or {@code "abort"} (vLLM's {@code finished_reason})
   */
  void onFinished(long requestId, long nowNanos, String reason);
}
