package dev.kvroute.bench.jmh;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Routing cost as the fleet grows: one {@code cache-aware} decision through {@link RouterCore} at
 * {@code backends} = 8, 64 and 256 replicas, each with 200K tokens of KV capacity (page 16), the index
 * filled to capacity by the traffic the fleet would see.
 *
 * <p>Workload: {@link ChatHistoryWorkload} with 32 sessions per backend (so every fleet size carries
 * the same traffic per replica) on 4 shared system prompts, histories growing to 24K tokens; about
 * twice as many live tokens as the fleet's capacity, so every view is full and inserts evict. Routing
 * is the router's: the policy sees every backend's match and load; {@code 2 x backends} requests are in
 * flight (their leases hold load and pins), the oldest released as each new one is routed.
 *
 * <ul>
 *   <li>{@code route}: {@link RouterCore#route(int[], String, java.util.Collection)} (hash the pages,
 *       match all backends, the policy, insert-and-pin, the lease) plus the release of the oldest
 *       in-flight request, on the next prompt of the stream (which includes copying the history:
 *       {@code workloadOnly}).
 *   <li>{@code decide}: {@link RouterCore#explain(int[], String, java.util.Collection)}, the decision
 *       alone (hash, match, policy; nothing recorded), cycling over 512 prompts drawn after the fill.
 *   <li>{@code workloadOnly}: producing the next prompt, the baseline to subtract from {@code route}.
 * </ul>
 *
 * <p>The tear-down prints the index's memory ({@link PrefixIndex#estimatedBytes()}, which agrees with
 * the measured heap to 0.005%, {@link PrefixIndexMemory}) and the tokens it holds.
 *
 * <p>Run: {@code java -jar microbench/target/microbench.jar FleetScalingBenchmark -f 1 -wi 3 -i 5};
 * figures in {@code docs/performance.md}. Target (issue 18): decision time at 256 backends at most
 * twice that at 8.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms3g", "-Xmx3g"})
public class FleetScalingBenchmark {
  static final long CAPACITY_TOKENS = 200_000;
  static final int SESSIONS_PER_BACKEND = 32;

  @Param({"8", "64", "256"})
  public int backends;

  private RouterCore core;
  private PrefixIndex index;
  private List<BackendId> healthy;
  private ChatHistoryWorkload workload;
  private Lease[] inFlight;
  private int slot;
  private int[][] arrivals;
  private int nextArrival;

  @Setup(Level.Trial)
  public void setUp() {
    index = PrefixIndex.radix(16, Ticker.system());
    core = RouterCore.create(
        Policies.create("cache-aware", PolicyConfig.defaults(), new SplittableRandom(1)),
        PromptTokenizer.create(Tokenizer.defaultTokenizer()), index, LoadTracker.create());
    healthy = new ArrayList<>(backends);
    for (int b = 0; b < backends; b++) {
      BackendId id = BackendId.of("engine-" + b);
      healthy.add(id);
      core.addBackend(id, CAPACITY_TOKENS);
    }
    workload = new ChatHistoryWorkload(42, SESSIONS_PER_BACKEND * backends, 24_000);
    inFlight = new Lease[2 * backends];
    int filled = 0;
    for (long i = 0; filled < backends; i++) {
      if (i > 200L * backends) {
        throw new IllegalStateException("views not full after " + i + " requests: " + filled + " of " + backends);
      }
      routeNext();
      if (i % 64 == 0) {
        filled = 0;
        for (BackendId b : healthy) {
          filled += index.sizeTokens(b) >= CAPACITY_TOKENS - 2 * 16 ? 1 : 0;
        }
      }
    }
    for (int i = 0; i < 4 * backends; i++) { // past the fill: steady state
      routeNext();
    }
    arrivals = new int[512][];
    for (int i = 0; i < arrivals.length; i++) {
      arrivals[i] = workload.nextPrompt();
      workload.replied();
    }
  }

  @TearDown(Level.Trial)
  public void report() {
    long held = 0;
    for (BackendId b : healthy) {
      held += index.sizeTokens(b);
    }
    long bytes = index.estimatedBytes();
    System.out.printf("%n[fleet] backends %d, held tokens %d, index memory %d B (%.1f MiB, %.2f B/token)%n",
        backends, held, bytes, bytes / 1048576.0, (double) bytes / held);
  }

  private Decision routeNext() {
    RouterCore.Routed routed = core.route(workload.nextPrompt(), null, healthy);
    workload.replied();
    routed.lease().firstToken();
    Lease oldest = inFlight[slot];
    if (oldest != null) {
      oldest.release();
    }
    inFlight[slot] = routed.lease();
    slot = (slot + 1) % inFlight.length;
    return routed.decision();
  }

  @Benchmark
  public Decision route() {
    return routeNext();
  }

  @Benchmark
  public Decision decide() {
    int[] prompt = arrivals[nextArrival];
    nextArrival = (nextArrival + 1) & (arrivals.length - 1);
    return core.explain(prompt, null, healthy);
  }

  @Benchmark
  public int[] workloadOnly() {
    int[] prompt = workload.nextPrompt();
    workload.replied();
    return prompt;
  }
}
