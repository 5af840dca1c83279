package dev.kvroute.bench.workload;

import dev.kvroute.bench.trace.BlockTokens;
import dev.kvroute.engine.model.EngineConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * An open-loop workload of several request streams, each with its own Poisson rate, priority and
 * tenant: the input of the overload scenarios, which the simulator (with the router's admission code)
 * and a real run through sockets replay the same way.
 *
 * <p>Stream {@code s} sends requests at exponentially distributed gaps of mean {@code 1 / rate} model
 * seconds from 0 to {@code durationSeconds} (one generator per stream, split from the seed, so adding a
 * stream does not move another's arrivals); the streams are merged by arrival time (ties: stream order).
 * Each request's prompt is the stream's shared prefix ({@code sharedPrefixTokens}, the same tokens for
 * every request of the stream, as a tenant's system prompt) followed by tokens unique to the request;
 * tokens come from {@link BlockTokens} (512-token blocks: prefix blocks numbered per stream, unique
 * blocks per request), so every token is a word of the tokenizer's vocabulary. A reply's length is
 * drawn uniformly from {@code [ceil(maxTokens / 2), floor(3 maxTokens / 2)]} (mean {@code maxTokens})
 * by a hash of the seed and the request's index, and the reply is exactly that long ({@code
 * ignore_eos}): replies of one length would keep the requests admitted together finishing together,
 * so the router's slots would free in bursts, which real traffic does not do.
 *
 * <p>Immutable and thread-safe.
 */
public final class OverloadWorkload implements OpenLoopWorkload {
  /**
   * One stream of requests.
   *
   * @param name short name, for reports ({@code high}, {@code light}...)
   * @param ratePerSecond mean arrivals per model second, {@code > 0}
   * @param priority sent as the {@code x-kvroute-priority} header (lower is served earlier)
   * @param tenant sent as the tenant header ({@link #TENANT_HEADER})
   * @param promptTokens prompt length in tokens, {@code >= 1}
   * @param sharedPrefixTokens leading tokens shared by every request of the stream, {@code 0..promptTokens}
   * @param maxTokens mean reply length in tokens, {@code >= 1}
   */
  public record Stream(
      String name, double ratePerSecond, int priority, String tenant, int promptTokens, int sharedPrefixTokens,
      int maxTokens) {
    public Stream {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(tenant, "tenant");
      if (!(ratePerSecond > 0) || Double.isInfinite(ratePerSecond)) {
        throw new IllegalArgumentException("ratePerSecond: " + ratePerSecond + " (expected: > 0)");
      }
      if (promptTokens < 1 || sharedPrefixTokens < 0 || sharedPrefixTokens > promptTokens) {
        throw new IllegalArgumentException("promptTokens " + promptTokens + ", sharedPrefixTokens "
            + sharedPrefixTokens + " (expected: 1 <= prompt, 0 <= shared <= prompt)");
      }
      if (maxTokens < 1) {
        throw new IllegalArgumentException("maxTokens: " + maxTokens + " (expected: >= 1)");
      }
    }

    /** This stream at {@code factor} times its rate. */
    public Stream scaled(double factor) {
      return new Stream(name, ratePerSecond * factor, priority, tenant, promptTokens, sharedPrefixTokens, maxTokens);
    }
  }

  /** The header the real run sends each request's tenant in (the router reads {@code header:NAME}). */
  public static final String TENANT_HEADER = "x-kvroute-tenant";

  private static final int BLOCK = 512;
  /** Block ids per prompt: ids stay below 2^32, which {@link BlockTokens} keeps distinct. */
  private static final long UNIQUE_BLOCKS = 1L << 12;

  private final String name;
  private final FleetSpec fleet;
  private final EngineConfig engine;
  private final List<Stream> streams;
  private final BlockTokens blocks;
  private final double[] arrivals;
  private final int[] streamOf;
  private final long seed;

  private OverloadWorkload(String name, FleetSpec fleet, EngineConfig engine, List<Stream> streams, BlockTokens blocks,
      double[] arrivals, int[] streamOf, long seed) {
    this.seed = seed;
    this.name = name;
    this.fleet = fleet;
    this.engine = engine;
    this.streams = streams;
    this.blocks = blocks;
    this.arrivals = arrivals;
    this.streamOf = streamOf;
  }

  /**
   * Draws the arrivals of {@code streams} over {@code durationSeconds}.
   *
   * @param fleet the replicas the workload runs on
   * @param engine every replica's configuration (its block size and capacity the fleet's)
   * @throws IllegalArgumentException on no stream, a duration that is not positive, or a prompt longer
   *     than {@code 4096 × 512} tokens
   */
  public static OverloadWorkload generate(String name, FleetSpec fleet, EngineConfig engine, List<Stream> streams,
      double durationSeconds, long seed, BlockTokens blocks) {
    Objects.requireNonNull(fleet, "fleet");
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(blocks, "blocks");
    if (streams.isEmpty()) {
      throw new IllegalArgumentException("streams: none (expected: at least one)");
    }
    if (!(durationSeconds > 0) || Double.isInfinite(durationSeconds)) {
      throw new IllegalArgumentException("durationSeconds: " + durationSeconds + " (expected: > 0)");
    }
    for (Stream s : streams) {
      if (s.promptTokens() > UNIQUE_BLOCKS * BLOCK) {
        throw new IllegalArgumentException("promptTokens: " + s.promptTokens() + " (expected: <= " + UNIQUE_BLOCKS * BLOCK + ")");
      }
    }
    SplittableRandom root = new SplittableRandom(seed);
    List<double[]> perStream = new ArrayList<>();
    int total = 0;
    for (Stream s : streams) {
      SplittableRandom r = root.split();
      double[] times = new double[16];
      int n = 0;
      double t = -Math.log(1 - r.nextDouble()) / s.ratePerSecond();
      while (t < durationSeconds) {
        if (n == times.length) {
          times = Arrays.copyOf(times, n * 2);
        }
        times[n++] = t;
        t += -Math.log(1 - r.nextDouble()) / s.ratePerSecond();
      }
      perStream.add(Arrays.copyOf(times, n));
      total += n;
    }
    double[] arrivals = new double[total];
    int[] streamOf = new int[total];
    int[] next = new int[streams.size()];
    for (int i = 0; i < total; i++) {
      int best = -1;
      for (int s = 0; s < streams.size(); s++) {
        double[] times = perStream.get(s);
        if (next[s] < times.length && (best < 0 || times[next[s]] < perStream.get(best)[next[best]])) {
          best = s;
        }
      }
      arrivals[i] = perStream.get(best)[next[best]++];
      streamOf[i] = best;
    }
    return new OverloadWorkload(name, fleet, engine, List.copyOf(streams), blocks, arrivals, streamOf, seed);
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public FleetSpec fleet() {
    return fleet;
  }

  @Override
  public EngineConfig engine() {
    return engine;
  }

  @Override
  public int size() {
    return arrivals.length;
  }

  @Override
  public double arrivalSeconds(int i) {
    return arrivals[i];
  }

  @Override
  public int[] promptTokens(int i) {
    Stream s = stream(i);
    int[] out = new int[s.promptTokens()];
    int shared = s.sharedPrefixTokens();
    for (int off = 0, b = 0; off < shared; off += BLOCK, b++) {
      blocks.write(streamOf[i] * UNIQUE_BLOCKS + b, out, off, Math.min(BLOCK, shared - off));
    }
    long unique = (streams.size() + (long) i) * UNIQUE_BLOCKS;
    for (int off = shared, b = 0; off < out.length; off += BLOCK, b++) {
      blocks.write(unique + b, out, off, Math.min(BLOCK, out.length - off));
    }
    return out;
  }

  @Override
  public int promptLength(int i) {
    return stream(i).promptTokens();
  }

  @Override
  public int maxTokens(int i) {
    int m = stream(i).maxTokens();
    int lo = (m + 1) / 2;
    int hi = Math.max(lo, 3 * m / 2);
    long z = (seed + 0x9E3779B97F4A7C15L * (i + 1L)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 31)) * 0x94D049BB133111EBL;
    z ^= z >>> 29;
    return lo + (int) Math.floorMod(z, (long) (hi - lo + 1));
  }

  /** Requests carry no session key: the tenant header is what groups them. */
  @Override
  public String sessionKey(int i) {
    return null;
  }

  /** The stream request {@code i} belongs to. */
  public Stream stream(int i) {
    return streams.get(streamOf[i]);
  }

  /** The streams, in the order given. */
  public List<Stream> streams() {
    return streams;
  }
}
