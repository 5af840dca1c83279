package dev.kvroute.bench.demo;

import dev.kvroute.bench.load.IndexAccuracy;
import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.LoadSettings;
import dev.kvroute.bench.load.LoadTest;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.load.RunTrust;
import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.sim.SendJitter;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.sim.Simulator;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.SideTraffic;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.server.MockEngineServer;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * The explainer's experiment end to end: the seed workload through real HTTP, one policy at a time,
 * each on a fresh bundled fleet (mock engines and a kvroute router in this process, on loopback), with
 * the simulator's prediction for the same workload and policies beside it.
 *
 * <p>Time: the engines run at time scale K, so a run of {@code T} model seconds takes {@code T / K}
 * wall seconds; the client reports model seconds (wall × K). Because CPU work does not shrink with
 * K, the demo keeps per-request CPU off the critical path: the workload is generated with the prompt
 * tokenizer the in-process engines share ({@link MockEngineServer#sharedPromptTokenizer}), and the
 * router's core uses it too, so long messages are encoded once, before any run; and a short warm-up
 * run on a throwaway fleet compiles the request path before the first measured run.
 *
 * <p>Not thread-safe; one demo at a time per JVM (the engines share one tokenizer).
 */
public final class Demo {
  /** The policies a real router runs in the demo, in table order. */
  public static final List<String> POLICIES = List.of("round-robin", "sticky", "cache-aware", "cost");

  /**
   * Wall-clock timing noise of the bundled harness (loopback, event loops, GC) that the jittered
   * predictions assume: each request's send time is delayed by up to this many wall seconds, times K
   * in model time. Near-simultaneous turns reach a router in either order, and order-dependent
   * decisions (round-robin's rotation, a tie between two loads) then send whole sessions elsewhere;
   * the real run is one draw of that, so it is judged against the range of several simulated draws.
   */
  public static final double JITTER_WALL_SECONDS = 0.01;

  /**
   * What to run.
   *
   * @param workload the seed workload's parameters
   * @param policies the routing configuration (the simulator and the routers use the same)
   * @param policyNames the policies to run for real, in table order
   * @param timeScale the engines' K
   * @param simThreads policies simulated at once
   * @param warmUp whether to run the short warm-up first
   * @param jitterRuns simulated runs with send times jittered by up to {@link #JITTER_WALL_SECONDS} x K,
   *     besides the exact one, whose range the real run is judged against ({@code >= 0})
   * @param sideLoad one-shot side requests per routed session sent straight to the engines, which no
   *     router sees ({@link SideTraffic}; 0: none), in the simulator and for real
   */
  public record Settings(
      SeedWorkloadConfig workload,
      SimPolicies policies,
      List<String> policyNames,
      double timeScale,
      int simThreads,
      boolean warmUp,
      int jitterRuns,
      double sideLoad) {
    /** Without side load. */
    public Settings(
        SeedWorkloadConfig workload, SimPolicies policies, List<String> policyNames, double timeScale,
        int simThreads, boolean warmUp, int jitterRuns) {
      this(workload, policies, policyNames, timeScale, simThreads, warmUp, jitterRuns, 0);
    }

    public Settings {
      if (!(sideLoad >= 0 && sideLoad <= SideTraffic.MAX_SHARE)) {
        throw new IllegalArgumentException("sideLoad: " + sideLoad + " (expected: 0.." + SideTraffic.MAX_SHARE + ")");
      }
      Objects.requireNonNull(workload, "workload");
      Objects.requireNonNull(policies, "policies");
      policyNames = List.copyOf(policyNames);
      if (policyNames.contains(SimPolicies.ORACLE)) {
        throw new IllegalArgumentException("policies: oracle (expected: policies a real router runs)");
      }
      if (!(timeScale > 0)) {
        throw new IllegalArgumentException("timeScale: " + timeScale + " (expected: > 0)");
      }
      if (jitterRuns < 0) {
        throw new IllegalArgumentException("jitterRuns: " + jitterRuns + " (expected: >= 0)");
      }
    }
  }

  /**
   * What the demo measured and predicted.
   *
   * @param workload the generated workload
   * @param measured the real runs' figures, in {@code policyNames} order, with the time scale
   * @param simulated the simulator's figures for the same policies plus {@code oracle}
   * @param simulatedRange {@code simulated} followed by the jittered simulated runs of the real
   *     policies: the range agreement is judged against
   * @param runs each real run's details (engine counters, client errors), in the same order
   * @param realWallSeconds wall time of the real runs (warm-up included)
   * @param side the routed and side sessions ({@link Settings#sideLoad})
   * @param accuracy per real run, its routers' predicted against the engines' reported cached tokens
   * @param simulatedAccuracy per policy of {@code simulated}, the same from the exact simulated run
   */
  public record Result(
      Workload workload,
      RunReport measured,
      RunReport simulated,
      List<RunReport> simulatedRange,
      List<MeasuredRun> runs,
      double realWallSeconds,
      SideTraffic side,
      List<IndexAccuracy> accuracy,
      List<IndexAccuracy> simulatedAccuracy) {
    public Result {
      simulatedRange = List.copyOf(simulatedRange);
      runs = List.copyOf(runs);
      accuracy = List.copyOf(accuracy);
      simulatedAccuracy = List.copyOf(simulatedAccuracy);
    }
  }

  /**
   * Wall seconds from an engine step to a router applying its KV events that the prediction assumes
   * (the mock's publisher sends each step's batch when the step ends; the subscriber thread decodes and
   * applies it; loopback in between), times K in model time.
   */
  public static final double EVENT_DELAY_WALL_SECONDS = 0.002;

  /**
   * The simulator's policies for a real run at time scale {@code timeScale}: {@code policies} whose
   * precise routers see the engines as a real router with the default index settings does (its 2 s
   * speculative entries and {@link #EVENT_DELAY_WALL_SECONDS} of event delay are wall time, K times as
   * long in model time).
   */
  public static SimPolicies asReal(SimPolicies policies, double timeScale) {
    return policies.withPrecise(
        SimPolicies.PreciseTiming.ofWallClock(KvEventIndex.Settings.DEFAULT, timeScale, EVENT_DELAY_WALL_SECONDS));
  }

  private Demo() {}

  /**
   * Runs the demo, logging progress to {@code log}.
   *
   * @param progress the load driver's progress display for the run of each policy
   * @throws IOException if an engine or router cannot be read
   * @throws InterruptedException if interrupted
   */
  public static Result run(Settings s, PrintStream log, Function<String, LoadProgress> progress)
      throws IOException, InterruptedException {
    PromptTokenizer tokenizer = MockEngineServer.sharedPromptTokenizer(Tokenizer.DEFAULT_ENCODING);
    Workload w = SeedWorkload.generate(s.workload(), tokenizer);
    log.printf(
        Locale.ROOT, "workload %s: %d sessions, %d requests, %d replicas with %,d tokens of KV cache each%n",
        w.name(), w.sessions().size(), w.requests(), w.fleet().replicas(), w.fleet().kvCapacityTokens());

    SideTraffic side = SideTraffic.of(w, s.workload(), s.sideLoad(), tokenizer);
    if (side.sideSessions() > 0) {
      log.printf(
          Locale.ROOT, "side load: %d one-shot requests straight to the engines, which no router sees%n",
          side.sideSessions());
    }
    List<String> simNames = new ArrayList<>(s.policyNames());
    simNames.add(SimPolicies.ORACLE);
    Prediction prediction =
        predictDetailed(
            side, tokenizer, asReal(s.policies(), s.timeScale()), simNames, s.policyNames(), s.timeScale(),
            s.jitterRuns(), s.simThreads());
    List<RunReport> range = prediction.range();
    RunReport simulated = range.get(0);
    log.printf(Locale.ROOT, "simulator prediction ready (exact and %d jittered runs)%n", s.jitterRuns());

    long t0 = System.nanoTime();
    if (s.warmUp()) {
      warmUp(s.workload(), s.policies(), s.timeScale(), tokenizer, log);
      if (s.policyNames().stream().anyMatch(SimPolicies::precise)) {
        warmUp(s.workload(), s.policies(), s.timeScale(), tokenizer, log, PRECISE_WARM_UP);
      }
    }
    List<MeasuredRun> runs = new ArrayList<>();
    List<PolicyFigures> figures = new ArrayList<>();
    List<IndexAccuracy> accuracy = new ArrayList<>();
    for (String policy : s.policyNames()) {
      try (BundledFleet fleet = BundledFleet.start(w.fleet(), policy, s.policies(), s.timeScale(), tokenizer)) {
        MeasuredRun run =
            LoadTest.run(
                side, LoadSettings.of(fleet.routerUri(), s.timeScale(), null).withTargets(fleet.routerUris()),
                fleet.engineUris(), policy,
                progress.apply(policy));
        accuracy.add(IndexAccuracy.scrape(fleet.routerUris()));
        runs.add(run);
        figures.add(run.figures());
        if (run.load().errors() > 0) {
          log.printf("%s: %d failed requests, e.g. %s%n", policy, run.load().errors(), run.load().errorSamples());
        }
      }
    }
    double wall = (System.nanoTime() - t0) / 1e9;
    return new Result(
        w, new RunReport(w.name(), s.timeScale(), figures), simulated, range, runs, wall, side, accuracy,
        prediction.accuracy());
  }

  /**
   * The simulator's prediction and its exact run's index accuracy.
   *
   * @param range the exact run of every simulated policy, then the jittered runs ({@link #predict})
   * @param accuracy per policy of the exact run, predicted against actual cached tokens
   */
  public record Prediction(List<RunReport> range, List<IndexAccuracy> accuracy) {}

  /**
   * As {@link #predict}, for {@code traffic}'s routed sessions with its side sessions sent straight to
   * the engines, with the exact run's index accuracy.
   */
  public static Prediction predictDetailed(
      SideTraffic traffic, PromptTokenizer tokenizer, SimPolicies policies, List<String> simNames,
      List<String> jitteredNames, double timeScale, int jitterRuns, int threads) {
    Simulator simulator =
        new Simulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()), policies, threads);
    List<PolicyFigures> exact = new ArrayList<>();
    List<IndexAccuracy> accuracy = new ArrayList<>();
    for (Simulator.Result r : simulator.runAllDetailed(traffic, simNames)) {
      exact.add(r.figures());
      accuracy.add(new IndexAccuracy(r.diagnostics().predictedCachedTokens(), r.diagnostics().actualCachedTokens()));
    }
    List<RunReport> range = new ArrayList<>(List.of(new RunReport(traffic.workload().name(), null, exact)));
    for (long seed = 1; seed <= jitterRuns; seed++) {
      SendJitter jitter = new SendJitter(JITTER_WALL_SECONDS * timeScale, seed);
      List<PolicyFigures> jittered = new ArrayList<>();
      for (Simulator.Result r : simulator.withJitter(jitter).runAllDetailed(traffic, jitteredNames)) {
        jittered.add(r.figures());
      }
      range.add(new RunReport(traffic.workload().name(), null, jittered));
    }
    return new Prediction(range, accuracy);
  }

  /**
   * The simulator's prediction for {@code w}: the exact run of {@code simNames} (which may add {@code
   * oracle}), followed by {@code jitterRuns} runs of {@code jitteredNames} with send times jittered by
   * up to {@link #JITTER_WALL_SECONDS} x K, the range a real run is judged against.
   */
  public static List<RunReport> predict(
      Workload w, PromptTokenizer tokenizer, SimPolicies policies, List<String> simNames, List<String> jitteredNames,
      double timeScale, int jitterRuns, int threads) {
    Simulator simulator =
        new Simulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()), policies, threads);
    List<RunReport> range = new ArrayList<>(List.of(simulator.runAll(w, simNames)));
    for (long seed = 1; seed <= jitterRuns; seed++) {
      SendJitter jitter = new SendJitter(JITTER_WALL_SECONDS * timeScale, seed);
      range.add(simulator.withJitter(jitter).runAll(w, jitteredNames));
    }
    return range;
  }

  /**
   * A short run on a throwaway fleet ({@link SeedWorkloadConfig#warmUp()}) so that the JIT has compiled
   * the request path before the first measured run; returns how well it kept up with {@code timeScale}.
   */
  static RunTrust warmUp(SeedWorkloadConfig config, SimPolicies policies, double timeScale, PromptTokenizer tokenizer,
      PrintStream log) throws IOException, InterruptedException {
    return warmUp(config, policies, timeScale, tokenizer, log, "cache-aware");
  }

  /**
   * The warm-up run of a demo that runs a precise policy: the KV-event path (the engines' publishers,
   * the routers' subscribers, decoding, the precise views) is code the approximate warm-up never runs,
   * and compiling it during the measured run's start burst (128 first turns of ~14K tokens in 2 wall
   * seconds) took CPU from the load driver and the engines.
   */
  static final String PRECISE_WARM_UP = "cache-aware" + SimPolicies.PRECISE_SUFFIX;

  /** As {@link #warmUp(SeedWorkloadConfig, SimPolicies, double, PromptTokenizer, PrintStream)}, running {@code policy}. */
  static RunTrust warmUp(SeedWorkloadConfig config, SimPolicies policies, double timeScale, PromptTokenizer tokenizer,
      PrintStream log, String policy) throws IOException, InterruptedException {
    Workload w = SeedWorkload.generate(config.warmUp(), tokenizer);
    long t0 = System.nanoTime();
    MeasuredRun run;
    try (BundledFleet fleet = BundledFleet.start(w.fleet(), policy, policies, timeScale, tokenizer)) {
      run = LoadTest.run(w, LoadSettings.of(fleet.routerUri(), timeScale, null).withTargets(fleet.routerUris()),
          fleet.engineUris(), "warm-up",
          LoadProgress.none());
    }
    RunTrust trust = RunTrust.of(run, timeScale, RunTrust.DEFAULT_MAX_LAG_SECONDS);
    log.printf(Locale.ROOT, "warm-up (%s) at K = %s: %d requests in %.1f s; %s%n", policy, RunTrust.fmt(timeScale), w.requests(),
        (System.nanoTime() - t0) / 1e9, trust.trustworthy() ? "kept up" : "fell behind (lag " + String.format(
            Locale.ROOT, "%.3f", trust.worstLagSeconds()) + " model s)");
    return trust;
  }

  /** Time scales {@link #calibrate} tries, fastest first. */
  public static final List<Double> CALIBRATION_STEPS = List.of(10.0, 8.0, 5.0, 4.0, 3.0, 2.0, 1.0);

  /**
   * {@code --time-scale auto}: the fastest time scale this machine sustains for {@code config}'s
   * workload. After one warm-up run (the JIT's), it runs the warm-up workload on a throwaway bundled fleet
   * at each of {@link #CALIBRATION_STEPS}, fastest first, and returns the first at which every lag of
   * {@link RunTrust} stayed within its bound (1 if none did).
   */
  public static double calibrate(SeedWorkloadConfig config, SimPolicies policies, PrintStream log)
      throws IOException, InterruptedException {
    PromptTokenizer tokenizer = MockEngineServer.sharedPromptTokenizer(Tokenizer.DEFAULT_ENCODING);
    warmUp(config, policies, 5, tokenizer, log);
    for (double k : CALIBRATION_STEPS) {
      if (warmUp(config, policies, k, tokenizer, log).trustworthy()) {
        log.printf(Locale.ROOT, "time scale: auto picked K = %s%n", RunTrust.fmt(k));
        return k;
      }
    }
    log.println("time scale: auto found no step that keeps up; using K = 1");
    return 1;
  }
}
