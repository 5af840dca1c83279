package dev.kvroute.bench.cli;

import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.LoadSettings;
import dev.kvroute.bench.load.LoadTest;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.report.ReportDocument;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.report.Tables;
import dev.kvroute.bench.trace.MooncakeReplay;
import dev.kvroute.bench.trace.MooncakeWorkload;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code kvroute loadtest}: drives a running router (kvroute, or any OpenAI-compatible endpoint in
 * front of vLLM-compatible engines) with a workload through real HTTP and prints the explainer's
 * figures: TTFT and cached tokens as the client sees them, prefill seconds from each engine's
 * {@code /metrics}.
 *
 * <p>Not thread-safe (a picocli command object).
 */
@Command(
    name = "loadtest",
    mixinStandardHelpOptions = true,
    description = {
      "Drive a running router with a workload through real HTTP and print the explainer's figures.",
      "Session starts are open-loop; turns within a session are closed-loop (think time after each reply).",
      "Example: kvroute loadtest --target http://127.0.0.1:8080 --engines http://127.0.0.1:8001,http://127.0.0.1:8002 --workload seed --replicas 2",
      "--workload mooncake replays the Mooncake trace open-loop, against --target or, without it, on a fresh bundled fleet per policy:",
      "  kvroute loadtest --workload mooncake --slice 20..30 --rate-multiplier 2.5 --time-scale 2 --policies round-robin,cache-aware,cost"
    },
    sortOptions = false)
public final class LoadtestCommand implements Callable<Integer> {

  @Option(names = "--target", paramLabel = "URL", description = "Base URL of the router (required, except for --workload mooncake, which without it runs each of --policies on a fresh bundled fleet).")
  URI target;

  @Option(names = "--engines", split = ",", paramLabel = "URL[,URL...]", description = "Base URLs of the engines behind it, in order (their /metrics gives prefill seconds); required with --target.")
  List<URI> engines;

  @Option(names = "--workload", paramLabel = "NAME", description = "Workload: seed, or mooncake (the Mooncake conversation trace; see the mooncake flags) (default: ${DEFAULT-VALUE}).")
  String workload = SeedWorkload.NAME;

  @Option(names = "--policies", split = ",", paramLabel = "P[,P...]", description = "mooncake without --target: policies to run, each on a fresh bundled fleet (default: round-robin, cache-aware, cost).")
  List<String> policies = MooncakeReplay.REAL_POLICIES;

  @Option(names = "--no-warm-up", description = "mooncake: skip the short warm-up before the first measured run (on a throwaway fleet, or against --target with prompts disjoint from the replay's).")
  boolean noWarmUp;

  @Option(names = "--time-scale", paramLabel = "K", description = "The engines' time scale: model seconds per wall second (1 for a real fleet; default: ${DEFAULT-VALUE}).")
  double timeScale = 1;

  @Option(names = "--label", paramLabel = "NAME", description = "Name of the row in the report, e.g. the router's policy (default: ${DEFAULT-VALUE}).")
  String label = "target";

  @Option(names = "--model", paramLabel = "NAME", description = "The model field to send (default: the first model the target lists).")
  String model;

  @Option(names = "--timeout", paramLabel = "SECONDS", description = "Wall seconds after which an unfinished request fails (default: ${DEFAULT-VALUE}).")
  long timeoutSeconds = 600;

  @Mixin ReportFiles reports;

  @Mixin SeedWorkloadOptions.SeedOrTrace seedOptions;

  @Mixin PolicyOptions policyOptions;

  @Mixin MooncakeOptions mooncakeOptions;

  @Override
  public Integer call() throws Exception {
    if ((target == null) != (engines == null)) {
      System.err.println("kvroute loadtest: --target and --engines go together");
      return 2;
    }
    if (MooncakeWorkload.NAME.equals(workload)) {
      return MooncakeCommands.loadtest(
          mooncakeOptions.config(seedOptions.config()), mooncakeOptions.tracePath(), policyOptions.policies(), policies,
          target, engines, label, model, timeScale, Duration.ofSeconds(timeoutSeconds), !noWarmUp,
          Math.max(1, Runtime.getRuntime().availableProcessors()), reports);
    }
    if (!SeedWorkload.NAME.equals(workload)) {
      System.err.println("kvroute loadtest: --workload " + workload + " (expected: seed or mooncake)");
      return 2;
    }
    if (target == null) {
      System.err.println("kvroute loadtest: --target and --engines are required for --workload seed (kvroute demo runs it on a bundled fleet)");
      return 2;
    }
    PromptTokenizer tokenizer = PromptTokenizer.create(Tokenizer.defaultTokenizer());
    Workload w = SeedWorkload.generate(seedOptions.config(), tokenizer);
    System.err.printf(
        Locale.ROOT, "kvroute loadtest: %d sessions, %d requests against %s (time scale %s)%n",
        w.sessions().size(), w.requests(), target, timeScale);
    LoadSettings settings =
        new LoadSettings(target, timeScale, model, Duration.ofSeconds(timeoutSeconds), 1);
    MeasuredRun run = LoadTest.run(w, settings, engines, label, LoadProgress.terminal(label));
    RunReport report = new RunReport(w.name(), timeScale, List.of(run.figures()));
    System.out.print(Tables.figures(report).plain());
    List<String> notes = new ArrayList<>();
    notes.add(
        String.format(
            Locale.ROOT,
            "Workload %s: %d sessions, %d requests against %s; time scale %s; %.1f s of wall time.",
            w.name(), w.sessions().size(), w.requests(), target, timeScale, run.load().wallSeconds()));
    notes.add(crossCheck(run));
    for (String n : notes) {
      System.out.println(n);
    }
    ReportDocument doc = new ReportDocument("kvroute loadtest: " + w.name() + " workload", notes, report, null);
    reports.write(doc);
    return run.load().errors() == 0 ? 0 : 1;
  }

  /** One line comparing the usage hit rate with the engines' counters, and naming any errors. */
  static String crossCheck(MeasuredRun run) {
    StringBuilder sb =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "%s: hit rate %.1f%% from usage.cached_tokens, %.1f%% from the engines' vllm:prefix_cache_hits/queries",
                run.figures().policy(), run.figures().hitRate() * 100, run.engineHitRate() * 100));
    if (run.load().cachedUnreported() > 0) {
      sb.append("; ").append(run.load().cachedUnreported())
          .append(" responses without cached_tokens (start vLLM with --enable-prompt-tokens-details)");
    }
    if (run.load().errors() > 0) {
      sb.append("; ").append(run.load().errors()).append(" failed requests, e.g. ")
          .append(run.load().errorSamples());
    }
    return sb.append('.').toString();
  }
}
