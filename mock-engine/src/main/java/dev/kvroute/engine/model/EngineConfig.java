package dev.kvroute.engine.model;

/**
 * Configuration of one emulated engine. Formulas and their sources are documented on
 * {@link CostModel}.
 *
 * @param blockSizeTokens KV block (page) size in tokens (vLLM {@code --block-size}, default 16)
 * @param numGpuBlocks KV blocks in the pool (vLLM {@code num_gpu_blocks})
 * @param scheduler which scheduler runs requests
 * @param maxNumBatchedTokens token budget per step ({@code continuous} only; vLLM default 8192)
 * @param maxNumSeqs maximum running requests ({@code continuous} only; vLLM default 256)
 * @param maxModelLen maximum prompt plus output length in tokens
 * @param cost the prefill and decode timing model
 */
public record EngineConfig(
    int blockSizeTokens,
    int numGpuBlocks,
    SchedulerKind scheduler,
    int maxNumBatchedTokens,
    int maxNumSeqs,
    int maxModelLen,
    CostModel cost) {

  /** The scheduler families the model implements. */
  public enum SchedulerKind {
    /** One prompt prefills at a time, first come first served; decode runs beside it (the explainer's model). */
    FCFS_PREFILL,
    /** vLLM-like steps with chunked prefill under a token budget. */
    CONTINUOUS
  }

  public EngineConfig {
    if (blockSizeTokens <= 0) {
      throw new IllegalArgumentException("blockSizeTokens: " + blockSizeTokens + " (expected: > 0)");
    }
    if (numGpuBlocks <= 0) {
      throw new IllegalArgumentException("numGpuBlocks: " + numGpuBlocks + " (expected: > 0)");
    }
  }
}
