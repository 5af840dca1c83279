package dev.kvroute.bench.cli;

import dev.kvroute.bench.demo.Demo;
import dev.kvroute.bench.load.EngineMetrics;
import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.LoadSettings;
import dev.kvroute.bench.load.LoadTest;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.load.RunTrust;
import dev.kvroute.bench.report.Agreement;
import dev.kvroute.bench.report.ReportDocument;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.report.Tables;
import dev.kvroute.bench.trace.MooncakeReplay;
import dev.kvroute.bench.trace.MooncakeWorkload;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
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

  @Option(names = "--target", split = ",", paramLabel = "URL[,URL...]", description = "Base URL of the router (required, except for --workload mooncake, which without it runs each of --policies on a fresh bundled fleet). Several (seed workload): router replicas in front of the same engines; requests are split across them round-robin in send order, so a session's turns visit every one, and --compare-policy simulates as many routers.")
  List<URI> targets;

  @Option(names = "--engines", split = ",", paramLabel = "URL[,URL...]", description = "Base URLs of the engines behind it, in order (their /metrics gives prefill seconds); required with --target.")
  List<URI> engines;

  @Option(names = "--workload", paramLabel = "NAME", description = "Workload: seed, mooncake (the Mooncake conversation trace; see the mooncake flags), or multi-model (two base models, one with LoRA adapters, each policy adapter-affine and adapter-blind on bundled fleets, without --target; see the multi-model flags) (default: ${DEFAULT-VALUE}).")
  String workload = SeedWorkload.NAME;

  @Option(names = "--policies", split = ",", paramLabel = "P[,P...]", description = "mooncake without --target: policies to run, each on a fresh bundled fleet (default: round-robin, cache-aware, cost).")
  List<String> policies = MooncakeReplay.REAL_POLICIES;

  @Option(names = "--no-warm-up", description = "Skip the short warm-up before the first measured run (against --target with prompts disjoint from the measured ones; mooncake without --target on a throwaway fleet).")
  boolean noWarmUp;

  @Option(names = "--time-scale", paramLabel = "K|auto", description = "The engines' time scale: model seconds per wall second (1 for a real fleet), or auto: read from the mock engines' kvroute_mock_time_scale (1 for engines that do not export it, and for a bundled fleet without --target) (default: ${DEFAULT-VALUE}).")
  String timeScale = "auto";

  @Option(names = "--max-lag", paramLabel = "SECONDS", description = "Clock lag (model seconds) beyond which the report calls the run not trustworthy: the engines' timer lag, the driver's send lag, the router and client path (default: ${DEFAULT-VALUE}).")
  double maxLagSeconds = RunTrust.DEFAULT_MAX_LAG_SECONDS;

  @Option(names = "--compare-policy", paramLabel = "NAME", description = "seed: also simulate the workload under this policy (with --balance-abs and the other policy flags, and the engines' KV capacity) and print the real run beside the prediction, as the demo does.")
  String comparePolicy;

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

  @Mixin MultiModelOptions multiModelOptions;

  @Override
  public Integer call() throws Exception {
    URI target = targets == null ? null : targets.get(0);
    if ((target == null) != (engines == null)) {
      System.err.println("kvroute loadtest: --target and --engines go together");
      return 2;
    }
    if (!(maxLagSeconds > 0)) {
      System.err.println("kvroute loadtest: --max-lag: " + maxLagSeconds + " (expected: > 0)");
      return 2;
    }
    double k;
    try {
      k = TimeScales.parse(timeScale, "--time-scale");
      if (target != null) {
        k = engineTimeScale(engines, k);
      } else if (Double.isNaN(k)) {
        k = 1; // a bundled fleet (mooncake without --target) runs at the given scale, by default 1
      }
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute loadtest: " + e.getMessage());
      return 2;
    }
    if (MooncakeWorkload.NAME.equals(workload)) {
      return MooncakeCommands.loadtest(
          mooncakeOptions.config(seedOptions.config()), mooncakeOptions.tracePath(), policyOptions.policies(), policies,
          target, engines, label, model, k, Duration.ofSeconds(timeoutSeconds), !noWarmUp,
          Math.max(1, Runtime.getRuntime().availableProcessors()), reports);
    }
    if (MultiModelCommands.NAME.equals(workload)) {
      return multiModel(k);
    }
    if (!SeedWorkload.NAME.equals(workload)) {
      System.err.println("kvroute loadtest: --workload " + workload + " (expected: seed, mooncake or multi-model)");
      return 2;
    }
    if (target == null) {
      System.err.println("kvroute loadtest: --target and --engines are required for --workload seed (kvroute demo runs it on a bundled fleet)");
      return 2;
    }
    PromptTokenizer tokenizer = PromptTokenizer.create(Tokenizer.defaultTokenizer());
    SeedWorkloadConfig config = seedOptions.config();
    Workload w = SeedWorkload.generate(config, tokenizer);
    LoadSettings settings =
        new LoadSettings(target, k, model, Duration.ofSeconds(timeoutSeconds), 1).withTargets(targets);
    if (!noWarmUp) {
      Workload warm = SeedWorkload.generate(config.warmUp(), tokenizer);
      long t0 = System.nanoTime();
      MeasuredRun wr = LoadTest.run(warm, settings, engines, "warm-up", LoadProgress.none());
      System.err.printf(
          Locale.ROOT, "kvroute loadtest: warm-up, %d requests (prompts disjoint from the measured ones) in %.1f s%n",
          warm.requests(), (System.nanoTime() - t0) / 1e9);
      if (wr.load().errors() > 0) {
        System.err.println("kvroute loadtest: warm-up: " + wr.load().errors() + " failed requests, e.g. "
            + wr.load().errorSamples());
      }
    }
    System.err.printf(
        Locale.ROOT, "kvroute loadtest: %d sessions, %d requests against %s (time scale %s)%n",
        w.sessions().size(), w.requests(), String.join(",", targets.stream().map(URI::toString).toList()), RunTrust.fmt(k));
    MeasuredRun run = LoadTest.run(w, settings, engines, label, LoadProgress.terminal(label));
    RunReport report = new RunReport(w.name(), k, List.of(run.figures()));
    System.out.print(Tables.figures(report).plain());
    List<String> notes = new ArrayList<>();
    notes.add(
        String.format(
            Locale.ROOT,
            "Workload %s: %d sessions, %d requests against %s; time scale %s; %.1f s of wall time.",
            w.name(), w.sessions().size(), w.requests(),
            targets.size() == 1 ? target : targets.size() + " routers (round-robin split) " + targets,
            RunTrust.fmt(k), run.load().wallSeconds()));
    notes.add(crossCheck(run));
    RunTrust trust = RunTrust.of(run, k, maxLagSeconds);
    notes.add(trust.describe(run.figures().policy()));
    List<RunReport> range = null;
    if (comparePolicy != null) {
      range = compare(w, tokenizer, run, k, report, notes);
    }
    for (String n : notes) {
      System.out.println(n);
    }
    ReportDocument doc =
        new ReportDocument("kvroute loadtest: " + w.name() + " workload", notes, report, range == null ? null : range.get(0));
    reports.write(doc);
    return run.load().errors() == 0 ? 0 : 1;
  }

  /**
   * {@code --workload multi-model}: without {@code --target}, each of {@code --policies} (default
   * cache-aware) adapter-affine and adapter-blind on fresh bundled fleets, beside the simulator.
   */
  private int multiModel(double k) throws Exception {
    if (targets != null) {
      System.err.println("kvroute loadtest: --workload multi-model runs on bundled fleets (its own engines with adapters,"
          + " affine and blind routers); leave out --target and --engines");
      return 2;
    }
    List<String> names = policies == MooncakeReplay.REAL_POLICIES ? dev.kvroute.bench.demo.MultiModelDemo.POLICIES : policies;
    MultiModelCommands.Real real;
    try {
      real = MultiModelCommands.real(
          seedOptions.config(), multiModelOptions, policyOptions.policies(), names, k, !noWarmUp,
          dev.kvroute.bench.demo.MultiModelDemo.JITTER_RUNS, System.err);
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute loadtest: " + e.getMessage());
      return 2;
    }
    reports.write(real.document());
    return real.exitCode();
  }

  /**
   * The time scale to measure with: the one every engine exports ({@code kvroute_mock_time_scale}; 1
   * when none does, as for real vLLM) for {@code auto} (NaN), else {@code requested} after checking that
   * the engines run at it.
   *
   * @throws IllegalArgumentException when the engines disagree with each other or with {@code requested}
   */
  static double engineTimeScale(List<URI> engines, double requested) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    Double found = null;
    for (URI e : engines) {
      double k = EngineMetrics.scrape(http, e).timeScale();
      if (Double.isNaN(k)) {
        continue;
      }
      if (found != null && found != k) {
        throw new IllegalArgumentException("the engines run at different time scales (" + RunTrust.fmt(found)
            + " and " + RunTrust.fmt(k) + " at " + e + "): restart them with one --time-scale");
      }
      found = k;
    }
    double engineScale = found == null ? 1 : found;
    if (Double.isNaN(requested)) {
      return engineScale;
    }
    if (found != null && requested != engineScale) {
      throw new IllegalArgumentException("--time-scale " + RunTrust.fmt(requested) + ", but the engines run at "
          + RunTrust.fmt(engineScale) + " (their kvroute_mock_time_scale): give the same, or auto");
    }
    return requested;
  }

  /**
   * Simulates {@code w} under {@link #comparePolicy} with the engines' KV capacity and prints the real
   * run beside the prediction (exact and jittered runs, as the demo judges agreement); adds the verdict
   * to {@code notes} and returns the simulated runs.
   */
  private List<RunReport> compare(
      Workload w, PromptTokenizer tokenizer, MeasuredRun run, double k, RunReport real, List<String> notes) {
    long capacity = run.engines().isEmpty() ? 0 : run.engines().get(0).kvCapacityTokens();
    Workload simulated = capacity > 0 ? w.withFleet(w.fleet().withKvCapacityTokens(capacity)) : w;
    SimPolicies p = Demo.asReal(policyOptions.policies().withRouters(targets.size()), k);
    List<String> names = List.of(comparePolicy);
    List<RunReport> range =
        Demo.predict(simulated, tokenizer, p, names, names, k, 3, Math.max(1, Runtime.getRuntime().availableProcessors()));
    RunReport renamed = new RunReport(real.workload(), real.timeScale(), List.of(run.figures().withPolicy(comparePolicy)));
    System.out.println();
    System.out.println("Measured beside the simulator's prediction (" + comparePolicy + ", engines' KV capacity "
        + capacity + " tokens):");
    System.out.print(Tables.comparison(renamed, range).plain());
    boolean agree = Agreement.ofRange(renamed, range).stream().allMatch(Agreement::within);
    notes.add(String.format(
        Locale.ROOT,
        "Simulator agreement for %s (hit rate within %.0f points, mean TTFT within %.0f%%, busiest/mean within %.2f of the"
            + " range of the exact simulated run and 3 jittered ones): %s.",
        comparePolicy, Agreement.MAX_HIT_RATE_POINTS, Agreement.MAX_MEAN_TTFT_RELATIVE * 100,
        Agreement.MAX_BUSIEST_DELTA, agree ? "agrees" : "DOES NOT AGREE"));
    return range;
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
