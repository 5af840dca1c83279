package dev.kvroute.bench.jmh;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.index.PrefixMatch;
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
 * Prefix index cost per routed request: one {@link PrefixIndex#match} and one
 * {@link PrefixIndex#insert} of a multi-turn chat prompt, at 8 backends x 200K tokens of capacity,
 * page 16, in steady state (every view full, so inserts evict).
 *
 * <p>Workload: {@link ChatHistoryWorkload} with 256 interleaved sessions on 4 shared system prompts
 * (1K-3K tokens) whose histories grow to 24K tokens (prompts average about 11K tokens, 700 pages);
 * about 3M distinct tokens in flight against 1.6M of capacity. Each request goes to the backend with
 * its session's home backend unless another backend matches 4K tokens more, which keeps sessions
 * spread over the fleet as a load-balancing cache-aware policy does.
 *
 * <ul>
 *   <li>{@code matchAndInsert}: the index work of routing one request (mean and, in SampleTime, the
 *       percentiles).
 *   <li>{@code matchOnly}: one descent for all 8 backends, no insert, cycling through 512 prompts
 *       drawn from the same stream after warm-up (so they find what a request arriving then finds).
 *   <li>{@code workloadOnly}: the baseline cost of producing the prompt (copying a history), to
 *       subtract from the two above.
 * </ul>
 *
 * <p>Run (after {@code mvn -B -q -o -pl router-core install -DskipTests} and
 * {@code mvn -B -q -o -pl bench package -DskipTests}):
 *
 * <pre>{@code
 * java -cp bench/target/kvroute.jar org.openjdk.jmh.Main PrefixIndexBenchmark -f 1 -wi 3 -i 5
 * }</pre>
 *
 * <p>Figures are in {@code docs/performance.md}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class PrefixIndexBenchmark {
  static final int BACKENDS = 8;
  static final long CAPACITY_TOKENS = 200_000;
  static final int SWITCH_MARGIN_TOKENS = 4_096;

  @Param("16")
  public int pageSizeTokens;

  private PrefixIndex index;
  private BackendId[] backends;
  private ChatHistoryWorkload workload;
  private int[][] arrivals;
  private int nextArrival;
  private long requests;
  private long promptTokens;
  private long matchedTokens;

  @Setup(Level.Trial)
  public void setUp() {
    index = PrefixIndex.radix(pageSizeTokens, Ticker.system());
    backends = new BackendId[BACKENDS];
    for (int b = 0; b < BACKENDS; b++) {
      backends[b] = BackendId.of("engine-" + b);
      index.addBackend(backends[b], CAPACITY_TOKENS);
    }
    workload = new ChatHistoryWorkload(42, 256, 24_000);
    for (int i = 0; i < 6_000; i++) { // fill every view to capacity
      route(workload, index, backends);
    }
    arrivals = new int[512][];
    for (int i = 0; i < arrivals.length; i++) {
      arrivals[i] = workload.nextPrompt();
      workload.replied();
    }
    for (BackendId backend : backends) {
      if (index.sizeTokens(backend) < CAPACITY_TOKENS - 2 * pageSizeTokens) {
        throw new IllegalStateException(backend + " not full after warm-up: "
            + index.sizeTokens(backend));
      }
    }
  }

  @TearDown(Level.Trial)
  public void report() {
    if (requests > 0) {
      System.out.printf("%n[index] %d requests, mean prompt %d tokens, matched %.1f%% of prompt"
              + " tokens on the chosen backend, estimatedBytes %d%n",
          requests, promptTokens / requests, 100.0 * matchedTokens / promptTokens,
          index.estimatedBytes());
    }
  }

  /**
   * Matches a prompt and inserts it into the chosen backend: the session's home backend (its id
   * modulo the fleet, standing in for a load balancer's choice) unless another backend matches at
   * least {@value #SWITCH_MARGIN_TOKENS} more tokens. Returns the chosen backend's match.
   */
  static int route(ChatHistoryWorkload workload, PrefixIndex index, BackendId[] backends) {
    int[] prompt = workload.nextPrompt();
    PrefixMatch match = index.match(prompt);
    BackendId home = backends[workload.lastSessionId() % backends.length];
    BackendId best = home;
    int bestMatched = match.matched(home);
    for (BackendId backend : backends) {
      int matched = match.matched(backend);
      if (matched > bestMatched) {
        best = backend;
        bestMatched = matched;
      }
    }
    if (bestMatched <= match.matched(home) + SWITCH_MARGIN_TOKENS) {
      best = home;
      bestMatched = match.matched(home);
    }
    index.insert(best, prompt);
    workload.replied();
    return bestMatched;
  }

  @Benchmark
  @BenchmarkMode({Mode.AverageTime, Mode.SampleTime})
  public int matchAndInsert() {
    int matched = route(workload, index, backends);
    requests++;
    promptTokens += workload.lastPromptTokens();
    matchedTokens += matched;
    return matched;
  }

  @Benchmark
  public PrefixMatch matchOnly() {
    int[] prompt = arrivals[nextArrival];
    nextArrival = (nextArrival + 1) & (arrivals.length - 1);
    return index.match(prompt);
  }

  @Benchmark
  public int[] workloadOnly() {
    int[] prompt = workload.nextPrompt();
    workload.replied();
    return prompt;
  }
}
