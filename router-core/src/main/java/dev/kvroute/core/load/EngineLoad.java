package dev.kvroute.core.load;

/**
 * An engine's own load gauges, as scraped from its {@code /metrics}: vLLM's
 * {@code vllm:num_requests_running}, {@code vllm:num_requests_waiting} and
 * {@code vllm:kv_cache_usage_perc}, or SGLang's {@code sglang:num_running_reqs},
 * {@code sglang:num_queue_reqs} and {@code sglang:token_usage}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param running requests in the engine's running batch (prefilling or decoding), {@code >= 0}
 * @param waiting requests queued in the engine, not yet scheduled or preempted, {@code >= 0}
 * @param kvUsage fraction 0..1 of KV blocks in use, or {@code -1} when the engine does not say
 * @throws IllegalArgumentException if a count is negative or {@code kvUsage} is neither {@code -1}
 *     nor within 0..1
 */
public record EngineLoad(int running, int waiting, double kvUsage) {
  public EngineLoad {
    if (running < 0 || waiting < 0) {
      throw new IllegalArgumentException("running " + running + ", waiting " + waiting + " (expected: >= 0)");
    }
    if (kvUsage != -1 && !(kvUsage >= 0 && kvUsage <= 1)) {
      throw new IllegalArgumentException("kvUsage: " + kvUsage + " (expected: 0..1, or -1 when unknown)");
    }
  }
}
