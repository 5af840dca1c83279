package dev.kvroute.engine.model;

/**
 * Counters (since start) and gauges (now) of one engine, in model time.
 *
 * @param running requests in the running batch ({@code vllm:num_requests_running})
 * @param waiting requests queued ({@code vllm:num_requests_waiting})
 * @param kvUsage fraction 0..1 of KV blocks in use by running requests ({@code vllm:kv_cache_usage_perc})
 * @param usedBlocks blocks held by running requests
 * @param cachedBlocks blocks holding a cached prefix (in use or evictable)
 * @param prefixQueryTokens prompt tokens looked up in the prefix cache ({@code vllm:prefix_cache_queries})
 * @param prefixHitTokens prompt tokens found there ({@code vllm:prefix_cache_hits})
 * @param promptTokens prompt tokens of requests started
 * @param generationTokens output tokens produced
 * @param prefillNanos total model time spent in prefill, summed over requests
 * @param evictedBlocks blocks evicted from the prefix cache
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
    long evictedBlocks) {}
