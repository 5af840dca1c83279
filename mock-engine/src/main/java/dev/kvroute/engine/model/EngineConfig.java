package dev.kvroute.engine.model;

import java.util.Objects;

/**
 * Configuration of one emulated engine. Build one with {@link #builder()}; formulas of the cost models
 * are documented on {@link CostModel}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param blockSizeTokens KV block (page) size in tokens (vLLM {@code --block-size}, default 16)
 * @param numGpuBlocks KV blocks in the pool (vLLM {@code num_gpu_blocks}); the KV capacity in tokens is
 *     {@code numGpuBlocks × blockSizeTokens}
 * @param scheduler which scheduler runs requests
 * @param maxNumBatchedTokens token budget per step ({@code CONTINUOUS} only; vLLM default 8192)
 * @param maxNumSeqs maximum running requests ({@code CONTINUOUS} only; vLLM default 256)
 * @param maxModelLen maximum prompt plus output length in tokens; at most the KV capacity, so that any
 *     admissible request fits in an empty pool (vLLM refuses to start otherwise)
 * @param cost the prefill and decode timing model
 * @param enableKvCacheEvents record the prefix cache's changes as {@link KvCacheEvent}s, one batch per
 *     engine step (vLLM's {@code enable_kv_cache_events}); off by default
 */
public record EngineConfig(
    int blockSizeTokens,
    int numGpuBlocks,
    SchedulerKind scheduler,
    int maxNumBatchedTokens,
    int maxNumSeqs,
    int maxModelLen,
    CostModel cost,
    boolean enableKvCacheEvents) {

  /** vLLM's default block size in tokens. */
  public static final int DEFAULT_BLOCK_SIZE_TOKENS = 16;

  /** The default pool size, Dynamo mocker's {@code num_gpu_blocks} default. */
  public static final int DEFAULT_NUM_GPU_BLOCKS = 16_384;

  /** The scheduler families the model implements. */
  public enum SchedulerKind {
    /**
     * One prompt prefills at a time, first come first served; decode runs beside it at a fixed pace,
     * independent of the queue and of other decodes (the explainer's single-request prefill queue).
     */
    FCFS_PREFILL,
    /** vLLM-like steps with chunked prefill under a token budget, LIFO preemption and recompute. */
    CONTINUOUS;

    /** The command-line name: {@code fcfs-prefill} or {@code continuous}. */
    public String cliName() {
      return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }

    /**
     * The kind named {@code name} ({@code fcfs-prefill} or {@code continuous}, case-insensitive).
     *
     * @throws IllegalArgumentException for any other name
     */
    public static SchedulerKind fromCliName(String name) {
      for (SchedulerKind k : values()) {
        if (k.cliName().equalsIgnoreCase(name) || k.name().equalsIgnoreCase(name)) {
          return k;
        }
      }
      throw new IllegalArgumentException(
          "scheduler: " + name + " (expected: fcfs-prefill or continuous)");
    }
  }

  public EngineConfig {
    Objects.requireNonNull(scheduler, "scheduler");
    Objects.requireNonNull(cost, "cost");
    if (blockSizeTokens <= 0) {
      throw new IllegalArgumentException("blockSizeTokens: " + blockSizeTokens + " (expected: > 0)");
    }
    if (numGpuBlocks <= 0) {
      throw new IllegalArgumentException("numGpuBlocks: " + numGpuBlocks + " (expected: > 0)");
    }
    if (maxNumBatchedTokens <= 0) {
      throw new IllegalArgumentException(
          "maxNumBatchedTokens: " + maxNumBatchedTokens + " (expected: > 0)");
    }
    if (maxNumSeqs <= 0) {
      throw new IllegalArgumentException("maxNumSeqs: " + maxNumSeqs + " (expected: > 0)");
    }
    long capacity = (long) numGpuBlocks * blockSizeTokens;
    if (maxModelLen <= 1 || maxModelLen > capacity) {
      throw new IllegalArgumentException(
          "maxModelLen: " + maxModelLen + " (expected: > 1 and <= KV capacity " + capacity + " tokens)");
    }
  }

  /** KV capacity in tokens: {@code numGpuBlocks × blockSizeTokens}. */
  public long kvCapacityTokens() {
    return (long) numGpuBlocks * blockSizeTokens;
  }

  /** A builder holding vLLM's defaults and the explainer's linear cost model. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from this configuration. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.blockSizeTokens = blockSizeTokens;
    b.numGpuBlocks = numGpuBlocks;
    b.scheduler = scheduler;
    b.maxNumBatchedTokens = maxNumBatchedTokens;
    b.maxNumSeqs = maxNumSeqs;
    b.maxModelLen = maxModelLen;
    b.cost = cost;
    b.enableKvCacheEvents = enableKvCacheEvents;
    return b;
  }

  /**
   * Builds an {@link EngineConfig}. Defaults: block 16 tokens, 16384 blocks, {@code CONTINUOUS}, 8192
   * batched tokens, 256 sequences, {@code maxModelLen = min(32768, KV capacity)}, and {@code
   * CostModel.linear(15000, 0.02, 30)}. Not thread-safe.
   */
  public static final class Builder {
    private int blockSizeTokens = DEFAULT_BLOCK_SIZE_TOKENS;
    private int numGpuBlocks = DEFAULT_NUM_GPU_BLOCKS;
    private long kvCapacityTokens = -1;
    private SchedulerKind scheduler = SchedulerKind.CONTINUOUS;
    private int maxNumBatchedTokens = 8192;
    private int maxNumSeqs = 256;
    private int maxModelLen = -1;
    private CostModel cost = CostModel.linear(15_000, 0.02, 30);
    private boolean enableKvCacheEvents;

    private Builder() {}

    public Builder blockSizeTokens(int blockSizeTokens) {
      this.blockSizeTokens = blockSizeTokens;
      return this;
    }

    /** Sets the pool size in blocks (overrides an earlier {@link #kvCapacityTokens}). */
    public Builder numGpuBlocks(int numGpuBlocks) {
      this.numGpuBlocks = numGpuBlocks;
      this.kvCapacityTokens = -1;
      return this;
    }

    /**
     * Sets the pool size in tokens; the block count is {@code floor(tokens / blockSizeTokens)}, taken
     * at {@link #build()} (overrides an earlier {@link #numGpuBlocks}).
     */
    public Builder kvCapacityTokens(long kvCapacityTokens) {
      if (kvCapacityTokens <= 0) {
        throw new IllegalArgumentException("kvCapacityTokens: " + kvCapacityTokens + " (expected: > 0)");
      }
      this.kvCapacityTokens = kvCapacityTokens;
      return this;
    }

    public Builder scheduler(SchedulerKind scheduler) {
      this.scheduler = scheduler;
      return this;
    }

    public Builder maxNumBatchedTokens(int maxNumBatchedTokens) {
      this.maxNumBatchedTokens = maxNumBatchedTokens;
      return this;
    }

    public Builder maxNumSeqs(int maxNumSeqs) {
      this.maxNumSeqs = maxNumSeqs;
      return this;
    }

    /** Sets the maximum prompt plus output length; unset means {@code min(32768, KV capacity)}. */
    public Builder maxModelLen(int maxModelLen) {
      this.maxModelLen = maxModelLen;
      return this;
    }

    /** Records {@link KvCacheEvent}s for {@link EngineListener#onKvEvents} (vLLM's {@code enable_kv_cache_events}). */
    public Builder enableKvCacheEvents(boolean enable) {
      this.enableKvCacheEvents = enable;
      return this;
    }

    public Builder cost(CostModel cost) {
      this.cost = cost;
      return this;
    }

    /**
     * The configuration.
     *
     * @throws IllegalArgumentException if a value is out of range (the message names it)
     */
    public EngineConfig build() {
      int blocks = numGpuBlocks;
      if (kvCapacityTokens > 0) {
        if (blockSizeTokens <= 0) {
          throw new IllegalArgumentException("blockSizeTokens: " + blockSizeTokens + " (expected: > 0)");
        }
        long b = kvCapacityTokens / blockSizeTokens;
        if (b <= 0 || b > Integer.MAX_VALUE) {
          throw new IllegalArgumentException("kvCapacityTokens: " + kvCapacityTokens
              + " (expected: between one block of " + blockSizeTokens + " tokens and 2^31 blocks)");
        }
        blocks = (int) b;
      }
      int len = maxModelLen;
      if (len < 0) {
        len = (int) Math.min(32_768L, (long) blocks * Math.max(1, blockSizeTokens));
      }
      return new EngineConfig(
          blockSizeTokens, blocks, scheduler, maxNumBatchedTokens, maxNumSeqs, len, cost, enableKvCacheEvents);
    }
  }
}
