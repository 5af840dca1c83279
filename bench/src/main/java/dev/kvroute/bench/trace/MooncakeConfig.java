package dev.kvroute.bench.trace;

import dev.kvroute.bench.sim.FleetEngines;
import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.engine.model.EngineConfig;
import java.util.Objects;

/**
 * How a Mooncake trace is replayed: which part of it, how fast, how each arrival bucket is spread, and
 * the fleet it runs against. Times are model seconds.
 *
 * <p>Arrival of a request with trace timestamp {@code t}: {@code (t - sliceFrom + jitter) /
 * rateMultiplier}, where {@code jitter} is 0 for {@link Arrivals#BURST} and uniform in {@code [0,
 * bucketSeconds)} for {@link Arrivals#JITTER}; a real run further divides by the engines' time scale to
 * get wall time.
 *
 * <p>Default fleet: 8 replicas of the explainer's engine (single FCFS prefill queue, 15,000 prefill
 * tokens/s plus 0.02 s per request, 30 decode tokens/s per request, 16-token blocks) with {@value
 * #DEFAULT_KV_CAPACITY_TOKENS} tokens of KV each. Why that capacity is in {@code docs/results.md}: it is
 * the order of a 70B-class model's KV room on an 8×80 GB replica, and it is where routing decides the
 * hit rate (one replica's cache holds minutes of its own traffic, not the trace's working set).
 *
 * <p>Immutable and thread-safe.
 *
 * @param sliceFromMinutes start of the replayed part of the trace, minutes (inclusive)
 * @param sliceToMinutes end of the replayed part, minutes (exclusive); infinite for the rest of the trace
 * @param rateMultiplier arrivals are this many times denser than in the trace; {@code > 0}
 * @param arrivals how a bucket's requests are spread
 * @param bucketSeconds width of the trace's arrival buckets (Mooncake: 3 s), the jitter's range
 * @param seed seed of the jitter
 * @param sessionKeys which session key each request carries
 * @param replicas engines in the fleet
 * @param kvCapacityTokens KV capacity of each engine, tokens (rounded up to whole blocks)
 * @param blockSizeTokens KV block size of the engines and page size of the router's index
 * @param scheduler the engines' scheduler
 * @param maxNumBatchedTokens token budget per step of the {@code continuous} scheduler
 * @param prefillTokensPerSecond prefill rate on uncached tokens
 * @param prefillOverheadSeconds fixed prefill time per request
 * @param decodeTokensPerSecond output tokens per second of each decoding request
 */
public record MooncakeConfig(
    double sliceFromMinutes,
    double sliceToMinutes,
    double rateMultiplier,
    Arrivals arrivals,
    double bucketSeconds,
    long seed,
    SessionKeys sessionKeys,
    int replicas,
    long kvCapacityTokens,
    int blockSizeTokens,
    EngineConfig.SchedulerKind scheduler,
    int maxNumBatchedTokens,
    double prefillTokensPerSecond,
    double prefillOverheadSeconds,
    double decodeTokensPerSecond) {

  /** Default KV capacity of each replica: 2^20 tokens. */
  public static final long DEFAULT_KV_CAPACITY_TOKENS = 1L << 20;

  public MooncakeConfig {
    Objects.requireNonNull(arrivals, "arrivals");
    Objects.requireNonNull(sessionKeys, "sessionKeys");
    Objects.requireNonNull(scheduler, "scheduler");
    if (!(sliceFromMinutes >= 0) || !(sliceToMinutes > sliceFromMinutes)) {
      throw new IllegalArgumentException(
          "slice: " + sliceFromMinutes + ".." + sliceToMinutes + " (expected: 0 <= FROM < TO, minutes)");
    }
    if (!(rateMultiplier > 0) || Double.isInfinite(rateMultiplier)) {
      throw new IllegalArgumentException("rateMultiplier: " + rateMultiplier + " (expected: > 0)");
    }
    if (!(bucketSeconds >= 0) || Double.isInfinite(bucketSeconds)) {
      throw new IllegalArgumentException("bucketSeconds: " + bucketSeconds + " (expected: >= 0)");
    }
    if (replicas < 1) {
      throw new IllegalArgumentException("replicas: " + replicas + " (expected: >= 1)");
    }
    if (blockSizeTokens < 1) {
      throw new IllegalArgumentException("blockSizeTokens: " + blockSizeTokens + " (expected: >= 1)");
    }
    if (kvCapacityTokens < blockSizeTokens) {
      throw new IllegalArgumentException(
          "kvCapacityTokens: " + kvCapacityTokens + " (expected: >= one block of " + blockSizeTokens + ")");
    }
    if (maxNumBatchedTokens < 1) {
      throw new IllegalArgumentException(
          "maxNumBatchedTokens: " + maxNumBatchedTokens + " (expected: >= 1)");
    }
  }

  /** The whole trace at its own rate, jittered buckets, the default fleet, seed 42. */
  public static MooncakeConfig defaults() {
    return new MooncakeConfig(
        0, Double.POSITIVE_INFINITY, 1, Arrivals.JITTER, 3, 42, SessionKeys.CONVERSATION, 8,
        DEFAULT_KV_CAPACITY_TOKENS, 16, EngineConfig.SchedulerKind.FCFS_PREFILL, 8192, 15_000, 0.02, 30);
  }

  /** Whether the whole trace from {@code sliceFromMinutes} on is replayed. */
  public boolean toEnd() {
    return Double.isInfinite(sliceToMinutes);
  }

  /** The slice as {@code FROM..TO} minutes ({@code FROM..} to the end). */
  public String sliceText() {
    return trim(sliceFromMinutes) + ".." + (toEnd() ? "" : trim(sliceToMinutes));
  }

  /** The fleet: replicas, capacity in whole blocks, block size and the linear timing. */
  public FleetSpec fleet() {
    return new FleetSpec(
            replicas, blockSizeTokens, blockSizeTokens, prefillTokensPerSecond, prefillOverheadSeconds,
            decodeTokensPerSecond)
        .withKvCapacityTokens(kvCapacityTokens);
  }

  /**
   * Each engine's configuration: the fleet's ({@link FleetEngines#config}: linear cost model, capacity,
   * block size, maximum model length = capacity) with this scheduler and token budget.
   */
  public EngineConfig engine() {
    return FleetEngines.config(fleet()).toBuilder()
        .scheduler(scheduler)
        .maxNumBatchedTokens(maxNumBatchedTokens)
        .build();
  }

  public MooncakeConfig withSlice(double fromMinutes, double toMinutes) {
    return new MooncakeConfig(
        fromMinutes, toMinutes, rateMultiplier, arrivals, bucketSeconds, seed, sessionKeys, replicas,
        kvCapacityTokens, blockSizeTokens, scheduler, maxNumBatchedTokens, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond);
  }

  public MooncakeConfig withRateMultiplier(double multiplier) {
    return new MooncakeConfig(
        sliceFromMinutes, sliceToMinutes, multiplier, arrivals, bucketSeconds, seed, sessionKeys, replicas,
        kvCapacityTokens, blockSizeTokens, scheduler, maxNumBatchedTokens, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond);
  }

  public MooncakeConfig withArrivals(Arrivals mode) {
    return new MooncakeConfig(
        sliceFromMinutes, sliceToMinutes, rateMultiplier, mode, bucketSeconds, seed, sessionKeys, replicas,
        kvCapacityTokens, blockSizeTokens, scheduler, maxNumBatchedTokens, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond);
  }

  public MooncakeConfig withFleet(int newReplicas, long newKvCapacityTokens) {
    return new MooncakeConfig(
        sliceFromMinutes, sliceToMinutes, rateMultiplier, arrivals, bucketSeconds, seed, sessionKeys,
        newReplicas, newKvCapacityTokens, blockSizeTokens, scheduler, maxNumBatchedTokens,
        prefillTokensPerSecond, prefillOverheadSeconds, decodeTokensPerSecond);
  }

  public MooncakeConfig withScheduler(EngineConfig.SchedulerKind kind) {
    return new MooncakeConfig(
        sliceFromMinutes, sliceToMinutes, rateMultiplier, arrivals, bucketSeconds, seed, sessionKeys, replicas,
        kvCapacityTokens, blockSizeTokens, kind, maxNumBatchedTokens, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond);
  }

  private static String trim(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }
}
