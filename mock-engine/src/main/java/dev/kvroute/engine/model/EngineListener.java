package dev.kvroute.engine.model;

/**
 * Receives what an {@link EngineModel} does as its clock advances. Called on the thread that calls
 * {@link EngineModel#advanceTo} or {@link EngineModel#abort}; implementations must not call back into
 * the model re-entrantly. Events come in model-time order; events at the same instant come in the
 * order the engine processed them.
 */
public interface EngineListener {
  /**
   * The request finished prefill and produced its first output token at {@code nowNanos} (model time).
   * Followed at once by {@link #onToken} with index 0. Reported once per request, also when a request
   * preempted later is recomputed.
   *
   * @param cachedTokens prompt tokens served from the prefix cache when its prefill started (whole
   *     blocks, at most {@code floor((prompt - 1) / blockSize) * blockSize}, vLLM's rule)
   * @param prefillNanos model time from the start of its prefill to this first token (vLLM's
   *     {@code request_prefill_time}: scheduled to first token)
   * @param queueNanos model time from arrival to the start of its prefill (vLLM's
   *     {@code request_queue_time})
   */
  void onFirstToken(long requestId, long nowNanos, int cachedTokens, long prefillNanos, long queueNanos);

  /**
   * Output token number {@code index} (0-based; 0 is the first token) was produced at {@code nowNanos};
   * {@code tokenId} is {@code request.outputTokens()[index]}.
   */
  void onToken(long requestId, long nowNanos, int index, int tokenId);

  /**
   * The request ended at {@code nowNanos}; it is forgotten by the engine after this call.
   *
   * @param reason {@code "length"}, {@code "stop"} or {@code "abort"} (vLLM's {@code finished_reason})
   */
  void onFinished(long requestId, long nowNanos, String reason);

  /**
   * The prefix-cache changes of one engine step that ended at {@code nowNanos} (model time), in the
   * order they happened: what vLLM's scheduler takes from its {@code BlockPool} after each step and
   * publishes as one {@code KVEventBatch}. Called only when {@link EngineConfig#enableKvCacheEvents()}
   * is set, and only for a step that changed the cache; after that step's token callbacks. A {@link
   * EngineModel#resetPrefixCache} reports its {@link KvCacheEvent.AllBlocksCleared} alone.
   *
   * @param events not empty; the listener may keep the list
   */
  default void onKvEvents(long nowNanos, java.util.List<KvCacheEvent> events) {}

  /** A listener that ignores every event. */
  static EngineListener none() {
    return NoopListener.INSTANCE;
  }
}

/** The listener returned by {@link EngineListener#none()}. */
enum NoopListener implements EngineListener {
  INSTANCE;

  @Override
  public void onFirstToken(long requestId, long nowNanos, int cachedTokens, long prefillNanos, long queueNanos) {}

  @Override
  public void onToken(long requestId, long nowNanos, int index, int tokenId) {}

  @Override
  public void onFinished(long requestId, long nowNanos, String reason) {}
}
