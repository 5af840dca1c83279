package dev.kvroute.bench.trace;

import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.bench.workload.OpenLoopWorkload;
import dev.kvroute.engine.model.EngineConfig;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * A Mooncake trace replayed as an {@link OpenLoopWorkload}: the requests of the configured slice, each
 * a streamed completion of its expanded block tokens ({@link BlockTokens}) with {@code max_tokens =
 * output_length}, arriving at its timestamp as {@link MooncakeConfig} maps it (slice start, jitter, rate
 * multiplier), ordered by that arrival.
 *
 * <p>Immutable and thread-safe.
 */
public final class MooncakeWorkload implements OpenLoopWorkload {
  /** The name reports use for this workload. */
  public static final String NAME = "mooncake";

  private final MooncakeTrace slice;
  private final MooncakeConfig config;
  private final BlockTokens blocks;
  private final List<MooncakeRequest> requests;
  private final double[] arrivalSeconds;
  private final EngineConfig engine;

  private MooncakeWorkload(
      MooncakeTrace slice, MooncakeConfig config, BlockTokens blocks, List<MooncakeRequest> requests,
      double[] arrivalSeconds) {
    this.slice = slice;
    this.config = config;
    this.blocks = blocks;
    this.requests = List.copyOf(requests);
    this.arrivalSeconds = arrivalSeconds;
    this.engine = config.engine();
  }

  /**
   * The workload of {@code trace} under {@code config}, prompts expanded by {@code blocks}.
   *
   * @throws IllegalArgumentException if the slice is empty, or a request of it needs more KV than an
   *     engine has (prompt plus output, the engines' {@code max_model_len}); the message names its line
   */
  public static MooncakeWorkload create(MooncakeTrace trace, MooncakeConfig config, BlockTokens blocks) {
    Objects.requireNonNull(trace, "trace");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(blocks, "blocks");
    MooncakeTrace slice =
        config.toEnd() && config.sliceFromMinutes() == 0
            ? trace
            : trace.slice(
                config.sliceFromMinutes(),
                config.toEnd() ? trace.lastArrivalMinutes() + 1 : config.sliceToMinutes());
    if (slice.requests().isEmpty()) {
      throw new IllegalArgumentException("slice: " + config.sliceText() + " minutes of " + trace.source()
          + " holds no request (the trace ends at minute " + trace.lastArrivalMinutes() + ")");
    }
    int maxModelLen = config.engine().maxModelLen();
    SplittableRandom jitter = new SplittableRandom(config.seed());
    double startMillis = config.sliceFromMinutes() * 60_000;
    record Timed(MooncakeRequest request, double seconds) {}
    List<Timed> timed = new ArrayList<>(slice.requests().size());
    for (MooncakeRequest r : slice.requests()) {
      long total = (long) r.inputLength() + r.outputLength();
      if (total > maxModelLen) {
        throw new IllegalArgumentException(trace.source() + ":" + r.line() + ": " + total
            + " prompt + output tokens (expected: <= the engines' max_model_len " + maxModelLen
            + "; raise --kv-capacity-tokens)");
      }
      double offset =
          config.arrivals() == Arrivals.JITTER ? jitter.nextDouble() * config.bucketSeconds() : 0;
      double seconds = ((r.timestampMillis() - startMillis) / 1000.0 + offset) / config.rateMultiplier();
      timed.add(new Timed(r, seconds));
    }
    timed.sort(Comparator.comparingDouble(Timed::seconds)); // stable: trace order within an instant
    List<MooncakeRequest> ordered = new ArrayList<>(timed.size());
    double[] arrivals = new double[timed.size()];
    for (int i = 0; i < arrivals.length; i++) {
      ordered.add(timed.get(i).request());
      arrivals[i] = timed.get(i).seconds();
    }
    return new MooncakeWorkload(slice, config, blocks, ordered, arrivals);
  }

  /**
   * The same requests at the same times with prompts expanded by {@code otherBlocks}: with another
   * seed, a workload of the same shape that shares no prefix with this one (a warm-up that leaves
   * nothing in the caches this one could hit).
   */
  public MooncakeWorkload withBlockTokens(BlockTokens otherBlocks) {
    return new MooncakeWorkload(slice, config, Objects.requireNonNull(otherBlocks, "otherBlocks"), requests, arrivalSeconds);
  }

  /** The block expansion of the prompts. */
  public BlockTokens blockTokens() {
    return blocks;
  }

  /** The replayed slice of the trace, in trace order. */
  public MooncakeTrace slice() {
    return slice;
  }

  public MooncakeConfig config() {
    return config;
  }

  /** Request {@code i} of the workload (arrival order). */
  public MooncakeRequest request(int i) {
    return requests.get(i);
  }

  /** Model seconds the slice spans: its length in trace time over the rate multiplier. */
  public double spanSeconds() {
    double to = config.toEnd() ? slice.lastArrivalMinutes() * 60 + config.bucketSeconds() : config.sliceToMinutes() * 60;
    return (to - config.sliceFromMinutes() * 60) / config.rateMultiplier();
  }

  /** Prompt tokens of the whole workload. */
  public long promptTokens() {
    long n = 0;
    for (MooncakeRequest r : requests) {
      n += r.inputLength();
    }
    return n;
  }

  @Override
  public String name() {
    return NAME;
  }

  @Override
  public FleetSpec fleet() {
    return config.fleet();
  }

  @Override
  public EngineConfig engine() {
    return engine;
  }

  @Override
  public int size() {
    return requests.size();
  }

  @Override
  public double arrivalSeconds(int i) {
    return arrivalSeconds[i];
  }

  @Override
  public int[] promptTokens(int i) {
    return blocks.prompt(requests.get(i));
  }

  @Override
  public int promptLength(int i) {
    return requests.get(i).inputLength();
  }

  @Override
  public int maxTokens(int i) {
    return requests.get(i).outputLength();
  }

  @Override
  public String sessionKey(int i) {
    return config.sessionKeys().keyOf(requests.get(i));
  }
}
