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
 *   <li>{@code pinnedWithInFlight}: as the router does it: match, {@link PrefixIndex#insertAndPin},
 *       and the release of the pin taken {@value #IN_FLIGHT} requests earlier (so {@value #IN_FLIGHT}
 *       prompts are pinned at any time, a fleet's worth of running requests).
 *   <li>{@code refreshedWithInFlight}: the same with a plain insert and, in place of the release, a
 *       second insert of the prompt routed {@value #IN_FLIGHT} requests earlier (the router before
 *       pins): the baseline for {@code pinnedWithInFlight}.
 *   <li>{@code workloadOnly}: the baseline cost of producing the prompt (copying a history), to
 *       subtract from the others.
 * </ul>
 *
 * <p>Run (after {@code mvn -B -q -o -pl router-core install -DskipTests} and
 * {@code mvn -B -q -pl microbench -am package -DskipTests}):
 *
 * <pre>{@code
 * java -jar microbench/target/microbench.jar PrefixIndexBenchmark -f 1 -wi 3 -i 5
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
  static final int IN_FLIGHT = 64;

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
  private final PrefixIndex.Pin[] pins = new PrefixIndex.Pin[IN_FLIGHT];
  private final BackendId[] inFlightBackend = new BackendId[IN_FLIGHT];
  private final PrefixIndex.Prompt[] inFlightPrompt = new PrefixIndex.Prompt[IN_FLIGHT];
  private int slot;

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
    PrefixIndex.Prompt prepared = index.prompt(prompt);
    Choice choice = choose(workload, index, backends, prepared);
    index.insert(choice.backend(), prepared);
    workload.replied();
    return choice.matched();
  }

  /** Where {@link #route} sends a prompt, and that backend's match. */
  private record Choice(BackendId backend, int matched) {}

  private static Choice choose(
      ChatHistoryWorkload workload, PrefixIndex index, BackendId[] backends, PrefixIndex.Prompt prompt) {
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
    return bestMatched <= match.matched(home) + SWITCH_MARGIN_TOKENS
        ? new Choice(home, match.matched(home))
        : new Choice(best, bestMatched);
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
  public PrefixIndex.Pin pinnedWithInFlight() {
    PrefixIndex.Prompt prompt = index.prompt(workload.nextPrompt());
    BackendId best = choose(workload, index, backends, prompt).backend();
    PrefixIndex.Pin pin = index.insertAndPin(best, prompt);
    workload.replied();
    PrefixIndex.Pin oldest = pins[slot];
    if (oldest != null) {
      oldest.release();
    }
    pins[slot] = pin;
    slot = (slot + 1) % IN_FLIGHT;
    return pin;
  }

  @Benchmark
  public PrefixIndex.Prompt refreshedWithInFlight() {
    PrefixIndex.Prompt prompt = index.prompt(workload.nextPrompt());
    BackendId best = choose(workload, index, backends, prompt).backend();
    index.insert(best, prompt);
    workload.replied();
    if (inFlightPrompt[slot] != null) {
      index.insert(inFlightBackend[slot], inFlightPrompt[slot]);
    }
    inFlightBackend[slot] = best;
    inFlightPrompt[slot] = prompt;
    slot = (slot + 1) % IN_FLIGHT;
    return prompt;
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
