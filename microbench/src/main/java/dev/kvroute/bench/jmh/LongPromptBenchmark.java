package dev.kvroute.bench.jmh;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.index.PrefixIndex;
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
import org.openjdk.jmh.annotations.Warmup;

/**
 * Index work of routing one long prompt into a view that is already full: a new prompt of
 * {@code promptPages} pages (page 16), as long as the backend's whole capacity, is matched, inserted
 * and pinned (its pages provisional, so the view goes to twice its capacity), then released (the view
 * is trimmed back, evicting the previous prompt). Issue 11's case C1 is {@code promptPages = 65536}
 * (about 4 MB of text): the per-backend view past its capacity grew its arrays one slot per page,
 * so this cost grew with the square of the prompt; it must grow linearly (compare the three sizes).
 *
 * <p>Run (after {@code mvn -B -q -pl microbench -am package -DskipTests}):
 * {@code java -jar microbench/target/microbench.jar LongPromptBenchmark -f 1 -wi 3
 * -i 5}. Figures are in {@code docs/performance.md}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
public class LongPromptBenchmark {
  static final int PAGE = 16;
  private static final BackendId BACKEND = BackendId.of("engine-0");

  @Param({"16384", "32768", "65536"})
  public int promptPages;

  private PrefixIndex index;
  private int[] tokens;
  private int next;

  @Setup(Level.Trial)
  public void setUp() {
    index = PrefixIndex.radix(PAGE, Ticker.system());
    index.addBackend(BACKEND, (long) promptPages * PAGE);
    SplittableRandom random = new SplittableRandom(11);
    tokens = new int[promptPages * PAGE];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = random.nextInt(200_000);
    }
    routeOne(); // the view is full from here on
    if (index.sizeTokens(BACKEND) != tokens.length) {
      throw new IllegalStateException("view not full: " + index.sizeTokens(BACKEND));
    }
  }

  /** A prompt that differs from every earlier one in its first token (so in every page hash). */
  private PrefixIndex.Prompt nextPrompt() {
    tokens[0] = 1_000_000 + next++;
    return index.prompt(tokens);
  }

  private int routeOne() {
    PrefixIndex.Prompt prompt = nextPrompt();
    int matched = index.match(prompt).matched(BACKEND);
    index.insertAndPin(BACKEND, prompt).release();
    return matched;
  }

  @Benchmark
  public int matchInsertPinAndReleasePastCapacity() {
    return routeOne();
  }
}
