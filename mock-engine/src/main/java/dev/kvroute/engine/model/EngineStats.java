package dev.kvroute.engine.model;

/**
 * Counters (since start) and gauges (now) of one engine, in model time. Immutable snapshot.
 *
 * @param running requests holding KV blocks and making progress: prefilling or decoding
 *     ({@code vllm:num_requests_running})
 * @param waiting requests queued, not yet started or preempted ({@code vllm:num_requests_waiting})
 * @param kvUsage fraction 0..1 of KV blocks held by requests ({@code vllm:kv_cache_usage_perc}); cached
 *     blocks that nobody holds count as free, as in vLLM
 * @param usedBlocks blocks held by requests
 * @param cachedBlocks blocks holding a cached prefix (held or evictable)
 * @param prefixQueryTokens prompt tokens looked up in the prefix cache ({@code vllm:prefix_cache_queries})
 * @param prefixHitTokens prompt tokens found there ({@code vllm:prefix_cache_hits})
 * @param promptTokens prompt tokens of requests started ({@code vllm:prompt_tokens})
 * @param generationTokens output tokens produced ({@code vllm:generation_tokens})
 * @param prefillNanos model time the engine spent computing prefill: the sum of prefill durations
 *     ({@code FCFS_PREFILL}) or of the prefill term of every step ({@code CONTINUOUS}); the explainer's
 *     "seconds of prefill" per replica
 * @param evictedBlocks cached blocks evicted to make room
 * @param preemptions requests preempted and sent back to the queue ({@code vllm:num_preemptions})
 */
public record EngineStats(
    int running,
    int waiting,
    double kvUsage,
    long usedBlocks,
    long cachedBlocks,
    long prefixQueryTokens,
    long prefixHitTokens,
    long promptTokens,
    long generationTokens,
    long prefillNanos,
    long evictedBlocks,
    long preemptions) {

  /**
   * These stats with requests that have not reached the engine model yet because of their LoRA
   * adapter: {@code loading} (their adapter loads) counted as running, {@code waitingForSlot} (every
   * adapter slot busy with other adapters) as waiting, as vLLM's scheduler counts them (it keeps a
   * request that would exceed {@code max_loras} in its waiting queue, and loads an adapter in the step
   * that runs its request).
   */
  public EngineStats plusNotYetInModel(int loading, int waitingForSlot) {
    if (loading == 0 && waitingForSlot == 0) {
      return this;
    }
    return new EngineStats(
        running + loading, waiting + waitingForSlot, kvUsage, usedBlocks, cachedBlocks, prefixQueryTokens,
        prefixHitTokens, promptTokens, generationTokens, prefillNanos, evictedBlocks, preemptions);
  }
}
