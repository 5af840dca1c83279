package dev.kvroute.bench.cli;

import dev.kvroute.bench.overload.OverloadBench;
import dev.kvroute.bench.overload.OverloadScenario;
import dev.kvroute.bench.trace.BlockTokens;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.server.MockEngineServer;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code kvroute overload}: the overload scenarios of issue 16, each predicted by the simulator (the
 * router's admission queue in virtual time) and then measured through real sockets on a bundled fleet
 * (loopback mock engines and a kvroute router with the same admission limits), with the agreement and
 * the priority and fairness ratios printed.
 *
 * <p>Not thread-safe (a picocli command object).
 */
@Command(
    name = "overload",
    mixinStandardHelpOptions = true,
    description = {
      "Run the overload scenarios (admission control): simulated, then through real sockets; print the agreement",
      "(admitted/rejected counts, mean TTFT) and the priority and fairness TTFT ratios.",
      "Example: kvroute overload --scenario overload-2x,priority-flood --duration 60 --time-scale 2"
    },
    sortOptions = false)
public final class OverloadCommand implements Callable<Integer> {
  @Option(names = "--scenario", paramLabel = "NAME[,NAME...]", split = ",",
      description = "Scenarios: overload-2x, overload-4x, priority-flood, tenants (default: all).")
  List<String> scenarios = OverloadScenario.NAMES;

  @Option(names = "--duration", paramLabel = "SECONDS",
      description = "Model seconds of arrivals per workload (default: ${DEFAULT-VALUE}).")
  double duration = 60;

  @Option(names = "--time-scale", paramLabel = "K",
      description = "The real run's engines run K model seconds per wall second (default: ${DEFAULT-VALUE}).")
  double timeScale = 2;

  @Option(names = "--seed", paramLabel = "N", description = "Seed of the arrivals (default: ${DEFAULT-VALUE}).")
  long seed = 16;

  @Option(names = "--simulate-only", description = "Only the simulator's prediction (no real run).")
  boolean simulateOnly;

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws Exception {
    if (!(duration > 0) || !(timeScale > 0)) {
      throw new ParameterException(spec.commandLine(),
          "--duration " + duration + ", --time-scale " + timeScale + " (expected: > 0)");
    }
    for (String name : scenarios) { // all names before the first scenario runs (minutes each)
      if (!OverloadScenario.NAMES.contains(name.trim())) {
        throw new ParameterException(spec.commandLine(), "--scenario " + name
            + " (expected: one of " + String.join(", ", OverloadScenario.NAMES) + ")");
      }
    }
    PromptTokenizer tokenizer = MockEngineServer.sharedPromptTokenizer(Tokenizer.DEFAULT_ENCODING);
    SingleTokenVocabulary vocabulary = SingleTokenVocabulary.of(tokenizer.tokenizer());
    BlockTokens blocks = BlockTokens.of(vocabulary);
    boolean allPass = true;
    for (String name : scenarios) {
      OverloadScenario scenario = OverloadScenario.of(name.trim(), duration, seed, blocks);
      long t0 = System.nanoTime();
      OverloadBench.Result r = simulateOnly
          ? OverloadBench.simulate(scenario, tokenizer, vocabulary)
          : OverloadBench.run(scenario, timeScale, tokenizer, vocabulary);
      OverloadBench.print(r, System.out);
      if (!simulateOnly) {
        allPass &= verdict(r);
      }
      System.out.printf(Locale.ROOT, "  (%.0f s wall)%n%n", (System.nanoTime() - t0) / 1e9);
    }
    if (!simulateOnly) {
      System.out.println(allPass ? "all checks passed" : "some checks failed (see above)");
    }
    return 0;
  }

  /** Prints the checks for {@code r}; whether all passed. */
  private static boolean verdict(OverloadBench.Result r) {
    boolean counts = r.admittedDifference() <= OverloadBench.MAX_COUNT_RELATIVE
        && (r.real().rejected() == 0 && r.simulated().rejected() == 0
            || r.rejectedDifference() <= OverloadBench.MAX_COUNT_RELATIVE);
    boolean ttft = r.ttftDifference() <= OverloadBench.MAX_TTFT_RELATIVE;
    boolean clean = r.real().failed() == 0;
    boolean focus = r.scenario().focus() == null
        || r.focusRatio(r.real(), r.realBaseline()) <= OverloadBench.MAX_FOCUS_RATIO;
    System.out.printf(Locale.ROOT, "  checks: counts within 5%% %s, mean TTFT within 15%% %s, no failure %s%s%n",
        ok(counts), ok(ttft), ok(clean), r.scenario().focus() == null ? "" : ", focus ratio within 2x " + ok(focus));
    return counts && ttft && clean && focus;
  }

  private static String ok(boolean b) {
    return b ? "PASS" : "FAIL";
  }
}
