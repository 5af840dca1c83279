package dev.kvroute.bench.cli;

import dev.kvroute.bench.demo.Demo;
import dev.kvroute.bench.demo.MultiModelDemo;
import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.load.RunTrust;
import dev.kvroute.bench.report.Agreement;
import dev.kvroute.bench.report.ReportDocument;
import dev.kvroute.bench.report.ReportWriter;
import dev.kvroute.bench.report.Tables;
import dev.kvroute.bench.workload.SideTraffic;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code kvroute demo}: the explainer's three-router table reproduced through real sockets. For each
 * policy a fresh bundled fleet (mock engines and a kvroute router in this process) serves the seed
 * workload; the table is printed with the simulator's prediction beside it and written to
 * {@code demo-report/} ({@code results.json}, {@code simulated.json}, {@code results.md},
 * {@code index.html}).
 *
 * <p>Not thread-safe (a picocli command object).
 */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description = {
      "Run the explainer's experiment end to end through real sockets.",
      "For each policy a fresh bundled fleet of mock engines and a kvroute router start on loopback and serve the seed workload; "
          + "the table is printed beside the simulator's prediction and written to demo-report/ "
          + "(results.json, simulated.json, results.md, index.html)."
    },
    sortOptions = false)
public final class DemoCommand implements Callable<Integer> {
  @Option(names = "--policies", split = ",", paramLabel = "P[,P...]", description = "Policies to run (default: round-robin, sticky, cache-aware, cost); P/precise (e.g. cache-aware/precise) runs P over the engines' KV events: the bundled engines publish them and the routers run --index precise.")
  List<String> policies = Demo.POLICIES;

  @Option(names = "--routers", paramLabel = "N", description = "Router replicas in front of the same engines, each with its own index; requests are split across them round-robin, so a session's turns visit every one (the simulator's --routers) (default: ${DEFAULT-VALUE}).")
  int routers = 1;

  @Option(names = "--time-scale", paramLabel = "K|auto", description = "Model seconds per wall second of the bundled engines, or auto: the fastest this machine keeps up with, measured by short warm-up runs (default: ${DEFAULT-VALUE}).")
  String timeScale = "5";

  @Option(names = "--out", paramLabel = "DIR", description = "Report directory (default: ${DEFAULT-VALUE}).")
  Path out = Path.of("demo-report");

  @Option(names = "--no-warm-up", description = "Skip the short warm-up run before the first measured run.")
  boolean noWarmUp;

  @Option(names = "--jitter-runs", paramLabel = "N", description = "Simulated runs with send times jittered by up to 10 wall ms (x K), besides the exact one; the real run agrees if it is within tolerance of their range (default: 3; multi-model: 7, each also with its own policy seed and adapter-scrape phase).")
  Integer jitterRuns;

  @Option(names = "--side-load", paramLabel = "SHARE", description = "Traffic no router sees: SHARE one-shot side requests per routed session (e.g. 1), each a new document sent straight to one engine (spread evenly), arriving over 200 model s, in the simulator and for real; the figures are the routed sessions' (default: ${DEFAULT-VALUE}).")
  double sideLoad;

  @Option(names = "--workload", paramLabel = "NAME", description = "seed (the explainer's table), or multi-model: two base models on disjoint replicas, one with LoRA adapters of Zipf popularity, each policy run adapter-affine and adapter-blind (default policies: cache-aware; see the multi-model flags) (default: ${DEFAULT-VALUE}).")
  String workload = "seed";

  @Mixin SeedWorkloadOptions.SeedOnly seedOptions;

  @Mixin PolicyOptions policyOptions;

  @Mixin MultiModelOptions multiModelOptions;

  @Override
  public Integer call() throws Exception {
    long t0 = System.nanoTime();
    PrintStream log = System.err;
    String refused = flagProblem(workload, sideLoad, multiModelOptions.dumpRequests);
    if (refused != null) {
      System.err.println("kvroute demo: " + refused);
      return 2;
    }
    double k;
    try {
      k = TimeScales.parse(timeScale, "--time-scale");
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute demo: " + e.getMessage());
      return 2;
    }
    try {
      policyOptions.policies().checkPages(policies, seedOptions.config().blockSizeTokens());
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute demo: " + e.getMessage());
      return 2;
    }
    if (Double.isNaN(k)) {
      k = Demo.calibrate(seedOptions.config(), policyOptions.policies(), log);
    }
    if (MultiModelCommands.NAME.equals(workload)) {
      return multiModel(k, log);
    }
    if (!"seed".equals(workload)) {
      System.err.println("kvroute demo: --workload " + workload + " (expected: seed or multi-model)");
      return 2;
    }
    Demo.Settings settings =
        new Demo.Settings(
            seedOptions.config(), policyOptions.policies().withRouters(routers), policies, k,
            Math.max(1, Runtime.getRuntime().availableProcessors()), !noWarmUp, jitterRuns == null ? 3 : jitterRuns, sideLoad);
    Demo.Result r = Demo.run(settings, log, LoadProgress::terminal);
    double wall = (System.nanoTime() - t0) / 1e9;

    PrintStream o = System.out;
    o.println();
    o.println("Measured through real HTTP (model seconds):");
    o.print(Tables.figures(r.measured()).plain());
    o.println();
    o.println("Measured beside the simulator's prediction:");
    o.print(Tables.comparison(r.measured(), r.simulatedRange()).plain());
    o.println();
    List<String> notes = notes(r, settings, wall);
    for (String n : notes) {
      o.println(n);
    }
    ReportDocument doc =
        new ReportDocument(
            "kvroute demo: the explainer's table through real sockets", notes, r.measured(), r.simulated(),
            r.simulatedRange());
    ReportWriter.write(out.resolve("results.json"), ReportWriter.json(r.measured()));
    ReportWriter.write(out.resolve("simulated.json"), ReportWriter.json(r.simulated()));
    ReportWriter.write(out.resolve("results.md"), ReportWriter.markdown(doc));
    ReportWriter.write(out.resolve("index.html"), ReportWriter.html(doc));
    o.println("Wrote " + out.resolve("results.json") + ", simulated.json, results.md, index.html.");
    boolean errors = r.runs().stream().anyMatch(x -> x.load().errors() > 0);
    return errors ? 1 : 0;
  }

  /**
   * What is wrong with the flags that only the chosen workload reads, checked before any calibration
   * or run (a multi-model demo takes minutes; a bad value found at its end would lose it).
   *
   * @return null if nothing is, else the message ({@code --side-load} out of 0..{@value
   *     SideTraffic#MAX_SHARE} or given to multi-model, which has no side traffic; {@code
   *     --dump-requests} given to seed, which writes no request records, or naming a file that cannot
   *     be created)
   */
  static String flagProblem(String workload, double sideLoad, Path dumpRequests) {
    if (!(sideLoad >= 0 && sideLoad <= SideTraffic.MAX_SHARE)) {
      return "--side-load: " + sideLoad + " (expected: 0.." + SideTraffic.MAX_SHARE + ")";
    }
    boolean multi = MultiModelCommands.NAME.equals(workload);
    if (multi && sideLoad > 0) {
      return "--side-load " + sideLoad + " with --workload multi-model (expected: --side-load only with the seed "
          + "workload; the multi-model runs have no side traffic)";
    }
    if (!multi && dumpRequests != null) {
      return "--dump-requests with --workload " + workload + " (expected: --workload multi-model; the seed "
          + "workload writes no request records)";
    }
    if (dumpRequests != null) {
      try {
        MultiModelCommands.checkWritable(dumpRequests);
      } catch (IllegalArgumentException e) {
        return e.getMessage();
      }
    }
    return null;
  }

  /** {@code --workload multi-model}: affine and blind per policy, written to {@link #out}. */
  private int multiModel(double k, PrintStream log) throws Exception {
    List<String> names = policies == Demo.POLICIES ? MultiModelDemo.POLICIES : policies;
    MultiModelCommands.Real real;
    try {
      real = MultiModelCommands.real(
          seedOptions.config(), multiModelOptions, policyOptions.policies(), names, k, !noWarmUp,
          jitterRuns == null ? MultiModelDemo.JITTER_RUNS : jitterRuns, log);
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute demo: " + e.getMessage());
      return 2;
    }
    ReportDocument doc = real.document();
    ReportWriter.write(out.resolve("results.json"), ReportWriter.json(doc.run()));
    ReportWriter.write(out.resolve("simulated.json"), ReportWriter.json(doc.prediction()));
    ReportWriter.write(out.resolve("results.md"), ReportWriter.markdown(doc));
    ReportWriter.write(out.resolve("index.html"), ReportWriter.html(doc));
    System.out.println("Wrote " + out.resolve("results.json") + ", simulated.json, results.md, index.html.");
    return real.exitCode();
  }

  private static List<String> notes(Demo.Result r, Demo.Settings s, double wall) {
    List<String> notes = new ArrayList<>(SimulateCommand.notes(r.workload(), s.policies()));
    notes.add(
        String.format(
            Locale.ROOT,
            "Real runs: for each policy a fresh fleet of %d mock engines and a kvroute router on loopback, time scale K = %s "
                + "(model time = wall time x K); TTFT measured by the client, hit rate from usage.prompt_tokens_details.cached_tokens, "
                + "prefill seconds from each engine's vllm:request_prefill_time_seconds_sum. Session starts open-loop, turns closed-loop "
                + "(think time after each reply).",
            r.workload().fleet().replicas(), s.timeScale()));
    if (s.policies().routers() > 1) {
      notes.add(s.policies().routers() + " router replicas in front of the same engines (in the simulator and for real), "
          + "requests split round-robin across them in send order, so a session's turns visit every one.");
    }
    if (s.policyNames().stream().anyMatch(dev.kvroute.bench.sim.SimPolicies::precise)) {
      dev.kvroute.bench.sim.SimPolicies.PreciseTiming t = Demo.asReal(s.policies(), s.timeScale()).timing();
      notes.add(String.format(
          Locale.ROOT,
          "Precise routers are predicted as the real ones see the engines: speculative entries live 2 wall s "
              + "(%.1f model s at K = %s) and each step's KV events are applied %.0f wall ms (%.3f model s) after it.",
          t.speculativeTtlSeconds(), RunTrust.fmt(s.timeScale()), Demo.EVENT_DELAY_WALL_SECONDS * 1000,
          t.eventDelaySeconds()));
    }
    if (r.side().sideSessions() > 0) {
      notes.add(SimulateCommand.sideNote(r.side()));
    }
    StringBuilder accuracy =
        new StringBuilder("Index accuracy, predicted / engine-reported cached tokens of routed requests, real (sim):");
    for (int i = 0; i < r.runs().size(); i++) {
      accuracy.append(
          String.format(
              Locale.ROOT, " %s %s (%s);", r.runs().get(i).figures().policy(), r.accuracy().get(i).ratioText(),
              r.simulatedAccuracy().get(i).ratioText()));
    }
    notes.add(accuracy.substring(0, accuracy.length() - 1) + ".");
    StringBuilder check = new StringBuilder("Cross-check of the hit rate with the engines' vllm:prefix_cache_hits/queries:");
    for (MeasuredRun m : r.runs()) {
      check.append(
          String.format(
              Locale.ROOT, " %s %.1f%% (usage %.1f%%);", m.figures().policy(), m.engineHitRate() * 100,
              m.figures().hitRate() * 100));
    }
    notes.add(check.substring(0, check.length() - 1) + ".");
    for (MeasuredRun m : r.runs()) {
      notes.add(RunTrust.of(m, s.timeScale(), RunTrust.DEFAULT_MAX_LAG_SECONDS).describe(m.figures().policy()));
    }
    long agreeExact = Agreement.of(r.measured(), r.simulated()).stream().filter(Agreement::within).count();
    long agree = Agreement.ofRange(r.measured(), r.simulatedRange()).stream().filter(Agreement::within).count();
    notes.add(
        String.format(
            Locale.ROOT,
            "Simulator agreement (hit rate within %.0f points, mean TTFT within %.0f%%, busiest/mean within %.2f) with the range "
                + "of the exact simulated run and %d with send times jittered by up to %.0f wall ms x K: %d of %d policies "
                + "(%d with the exact run alone).",
            Agreement.MAX_HIT_RATE_POINTS, Agreement.MAX_MEAN_TTFT_RELATIVE * 100, Agreement.MAX_BUSIEST_DELTA,
            r.simulatedRange().size() - 1, Demo.JITTER_WALL_SECONDS * 1000, agree, r.measured().policies().size(),
            agreeExact));
    notes.add(
        String.format(
            Locale.ROOT, "Wall time: %.0f s in total, %.0f s of it the real runs.", wall, r.realWallSeconds()));
    return notes;
  }
}
