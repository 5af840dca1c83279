package dev.kvroute.bench.workload;

/**
 * The engine fleet a workload is meant for: how many replicas, their KV capacity and their timing
 * (the mock engine's {@code fcfs-prefill} scheduler with the linear cost model). The simulator builds
 * its engine models from it; the demo starts its mock engines with it.
 *
 * <p>Immutable and thread-safe.
 *
 * @param replicas engines in the fleet
 * @param kvCapacityTokens KV capacity of each engine in tokens (a whole number of blocks)
 * @param blockSizeTokens KV block size in tokens
 * @param prefillTokensPerSecond prefill rate on uncached prompt tokens, model time
 * @param prefillOverheadSeconds fixed prefill time per request, model time
 * @param decodeTokensPerSecond output tokens per second of each decoding request, model time
 */
public record FleetSpec(
    int replicas,
    long kvCapacityTokens,
    int blockSizeTokens,
    double prefillTokensPerSecond,
    double prefillOverheadSeconds,
    double decodeTokensPerSecond) {
  public FleetSpec {
    if (replicas < 1) {
      throw new IllegalArgumentException("replicas: " + replicas + " (expected: >= 1)");
    }
    if (blockSizeTokens < 1) {
      throw new IllegalArgumentException("blockSizeTokens: " + blockSizeTokens + " (expected: >= 1)");
    }
    if (kvCapacityTokens < blockSizeTokens || kvCapacityTokens % blockSizeTokens != 0) {
      throw new IllegalArgumentException(
          "kvCapacityTokens: " + kvCapacityTokens + " (expected: a positive multiple of "
              + blockSizeTokens + ")");
    }
  }

  /** KV blocks per engine ({@code num_gpu_blocks}). */
  public int numGpuBlocks() {
    return Math.toIntExact(kvCapacityTokens / blockSizeTokens);
  }

  /** A copy with another KV capacity, rounded up to whole blocks. */
  public FleetSpec withKvCapacityTokens(long tokens) {
    long blocks = (tokens + blockSizeTokens - 1) / blockSizeTokens;
    return new FleetSpec(
        replicas, blocks * blockSizeTokens, blockSizeTokens, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond);
  }

  /** A copy with another replica count. */
  public FleetSpec withReplicas(int n) {
    return new FleetSpec(
        n, kvCapacityTokens, blockSizeTokens, prefillTokensPerSecond, prefillOverheadSeconds,
        decodeTokensPerSecond);
  }
}
