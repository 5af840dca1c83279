package dev.kvroute.bench.demo;

import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.LoadSettings;
import dev.kvroute.bench.load.LoadTest;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.load.RunTrust;
import dev.kvroute.bench.report.ModelBreakdown;
import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.sim.SendJitter;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.sim.Simulator;
import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.server.MockEngineServer;
import dev.kvroute.core.exposition.PrometheusText;
import dev.kvroute.core.exposition.Sample;
import dev.kvroute.engine.model.LoraSlots;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Function;

/**
 * The multi-model scenario end to end: the seed workload's sessions bound to two base models and
 * model B's LoRA adapters ({@link ModelPlan#twoModels}), run through real HTTP with LoRA affinity on
 * ("affine") and off ("blind") for each policy, each run on a fresh {@link MultiModelFleet} (mock
 * engines with {@code --lora-modules}, {@code --max-loras} and an adapter load time, and a kvroute
 * router discovering them), with the simulator's prediction for the same runs beside it.
 *
 * <p>The simulator models what the router knows of the adapter slots as the proxy learns it: read
 * every engine-load scrape ({@code engineLoadInterval} of wall time, times K of model time; {@link
 * Simulator#withLoraScrape}), not live. Timing otherwise as {@link Demo}: the workload is tokenized
 * with the engines' shared tokenizer, a short warm-up run on a throwaway fleet compiles the path, and
 * the real run is judged against the range of the exact simulated run and runs with send times
 * jittered by {@link Demo#JITTER_WALL_SECONDS} x K.
 *
 * <p>Not thread-safe; one run at a time per JVM (the engines share one tokenizer).
 */
public final class MultiModelDemo {
  /** The policies run for real by default. */
  public static final List<String> POLICIES = List.of("cache-aware");

  /**
   * Simulated runs besides the exact one that the real runs are judged against, by default: each with
   * its own send jitter, adapter-scrape phase and policy seed. Affine routing's mean TTFT swings by
   * about 20% over these alone (which replica an adapter lands on decides its later loads), so fewer
   * runs would span less than a real run's own spread.
   */
  public static final int JITTER_RUNS = 7;

  /** The router's engine-load scrape interval in the demo's fleets, by default (wall time). */
  public static final Duration ENGINE_LOAD_INTERVAL = Duration.ofMillis(200);

  /**
   * What to run.
   *
   * @param workload the seed workload's parameters (sessions, documents, fleet)
   * @param adapters model B's adapters ({@code model-b-lora-1..N}, Zipf popularity)
   * @param baseShareOfB share of model B's sessions run with the base model, in [0, 1]
   * @param maxLoras adapters active at once on an engine ({@code --max-loras})
   * @param loraLoadSeconds model seconds to load an adapter into a slot
   * @param policies the routing configuration (the simulator and the routers use the same)
   * @param policyNames the policies to run for real, each affine and blind
   * @param timeScale the engines' K
   * @param engineLoadInterval the routers' engine-load scrape interval (wall time, at least 100 ms)
   * @param simThreads runs simulated at once
   * @param warmUp whether to run the short warm-up first
   * @param jitterRuns simulated runs with jittered send times besides the exact one ({@code >= 0})
   */
  public record Settings(
      SeedWorkloadConfig workload,
      int adapters,
      double baseShareOfB,
      int maxLoras,
      double loraLoadSeconds,
      SimPolicies policies,
      List<String> policyNames,
      double timeScale,
      Duration engineLoadInterval,
      int simThreads,
      boolean warmUp,
      int jitterRuns) {
    public Settings {
      Objects.requireNonNull(workload, "workload");
      Objects.requireNonNull(policies, "policies");
      policyNames = List.copyOf(policyNames);
      if (policyNames.isEmpty() || policyNames.contains(SimPolicies.ORACLE)) {
        throw new IllegalArgumentException("policies: " + policyNames + " (expected: policies a real router runs)");
      }
      if (!(timeScale > 0)) {
        throw new IllegalArgumentException("timeScale: " + timeScale + " (expected: > 0)");
      }
      if (engineLoadInterval.toMillis() < 100) {
        throw new IllegalArgumentException(
            "engineLoadInterval: " + engineLoadInterval.toMillis() + " ms (expected: >= 100 ms, the router's minimum)");
      }
      if (jitterRuns < 0) {
        throw new IllegalArgumentException("jitterRuns: " + jitterRuns + " (expected: >= 0)");
      }
      // validates the model parameters (the fields are assigned after this body)
      ModelPlan.twoModels(
          workload.replicas(), workload.sessions(), adapters, baseShareOfB, maxLoras, loraLoadSeconds, workload.seed());
    }

    /** The model plan over {@code config}'s replicas and sessions. */
    public ModelPlan plan(SeedWorkloadConfig config) {
      return ModelPlan.twoModels(
          config.replicas(), config.sessions(), adapters, baseShareOfB, maxLoras, loraLoadSeconds, config.seed());
    }

    /** Model B's adapters, as the engines load them. */
    public List<String> adapterNames() {
      List<String> out = new ArrayList<>();
      for (int k = 1; k <= adapters; k++) {
        out.add(ModelPlan.adapterName(k));
      }
      return out;
    }

    /** Model seconds between the router's reads of the adapter slots: the scrape interval times K. */
    public double loraScrapeModelSeconds() {
      return engineLoadInterval.toNanos() / 1e9 * timeScale;
    }
  }

  /**
   * What was measured and predicted.
   *
   * @param workload the generated workload
   * @param plan its models
   * @param measured the real runs, named {@code policy, affine} and {@code policy, blind}, with K
   * @param simulatedRange the exact simulated runs (the real ones plus the oracle's), then the jittered
   *     runs of the real ones: the range agreement is judged against
   * @param measuredByModel each real run's breakdown by model, in {@code measured}'s order
   * @param simulatedByModel each exact simulated run's breakdown by model, in its order
   * @param runs each real run's details, in {@code measured}'s order
   * @param realWallSeconds wall time of the real runs (warm-up included)
   * @param measuredSlots each real run's adapter-slot account, summed over its engines' {@code
   *     kvroute_mock_lora_*} counters, in {@code measured}'s order
   * @param exact the exact simulated runs (the real ones' policies, then the oracle's), with their
   *     diagnostics: per-request records and adapter-slot accounts
   */
  public record Result(
      Workload workload,
      ModelPlan plan,
      RunReport measured,
      List<RunReport> simulatedRange,
      List<ModelBreakdown> measuredByModel,
      List<ModelBreakdown> simulatedByModel,
      List<MeasuredRun> runs,
      double realWallSeconds,
      List<LoraSlots.Stats> measuredSlots,
      List<Simulator.ModelRun> exact) {
    public Result {
      measuredSlots = List.copyOf(measuredSlots);
      exact = List.copyOf(exact);
      simulatedRange = List.copyOf(simulatedRange);
      measuredByModel = List.copyOf(measuredByModel);
      simulatedByModel = List.copyOf(simulatedByModel);
      runs = List.copyOf(runs);
    }

    /** The exact simulated runs. */
    public RunReport simulated() {
      return simulatedRange.get(0);
    }
  }

  private MultiModelDemo() {}

  /**
   * Runs the scenario, logging progress to {@code log}.
   *
   * @throws IOException if an engine or router cannot be read
   * @throws InterruptedException if interrupted
   */
  public static Result run(Settings s, PrintStream log, Function<String, LoadProgress> progress)
      throws IOException, InterruptedException {
    PromptTokenizer tokenizer = MockEngineServer.sharedPromptTokenizer(Tokenizer.DEFAULT_ENCODING);
    Workload seed = SeedWorkload.generate(s.workload(), tokenizer);
    Workload w = new Workload("multi-model", seed.sessions(), seed.fleet(), seed.meanFinalHistoryTokens());
    ModelPlan plan = s.plan(s.workload());
    log.printf(
        Locale.ROOT, "workload %s: %d sessions, %d requests, %d replicas with %,d tokens of KV cache each%n",
        w.name(), w.sessions().size(), w.requests(), w.fleet().replicas(), w.fleet().kvCapacityTokens());

    List<String> simNames = new ArrayList<>(s.policyNames());
    simNames.add(SimPolicies.ORACLE);
    Simulator simulator =
        new Simulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()), s.policies(), s.simThreads())
            .withLoraScrape(s.loraScrapeModelSeconds());
    List<Simulator.ModelRun> exact = simulator.runModels(w, plan, simNames);
    List<RunReport> range = new ArrayList<>();
    range.add(report(w, exact));
    List<ModelBreakdown> simByModel = new ArrayList<>();
    for (Simulator.ModelRun r : exact) {
      simByModel.add(ModelBreakdown.of(r.label(), plan, r.result().diagnostics().requests()));
    }
    for (long j = 1; j <= s.jitterRuns(); j++) {
      // each its own send jitter, scrape phase (drawn from the jitter's seed) and policy seed (ties)
      SendJitter jitter = new SendJitter(Demo.JITTER_WALL_SECONDS * s.timeScale(), j);
      SimPolicies p = s.policies();
      Simulator other =
          new Simulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()),
              new SimPolicies(p.config(), p.seed() + j, p.indexReplies(), p.routers(), p.timing(), p.pageSizeTokens()), s.simThreads())
              .withLoraScrape(s.loraScrapeModelSeconds())
              .withJitter(jitter);
      range.add(report(w, other.runModels(w, plan, s.policyNames())));
    }
    log.printf(Locale.ROOT, "simulator prediction ready (exact and %d jittered runs)%n", s.jitterRuns());

    long t0 = System.nanoTime();
    if (s.warmUp()) {
      warmUp(s, tokenizer, log);
    }
    List<MeasuredRun> runs = new ArrayList<>();
    List<LoraSlots.Stats> slots = new ArrayList<>();
    List<PolicyFigures> figures = new ArrayList<>();
    List<ModelBreakdown> byModel = new ArrayList<>();
    for (String policy : s.policyNames()) {
      for (boolean affine : List.of(true, false)) {
        String label = Simulator.ModelRun.label(policy, affine);
        RealRun real = runOnce(w, plan, s, policy, affine, tokenizer, label, progress.apply(label));
        MeasuredRun run = real.run();
        runs.add(run);
        slots.add(real.slots());
        figures.add(run.figures());
        byModel.add(ModelBreakdown.of(label, plan, run.load().requests()));
        if (run.load().errors() > 0) {
          log.printf("%s: %d failed requests, e.g. %s%n", label, run.load().errors(), run.load().errorSamples());
        }
      }
    }
    double wall = (System.nanoTime() - t0) / 1e9;
    return new Result(
        w, plan, new RunReport(w.name(), s.timeScale(), figures), range, byModel, simByModel, runs, wall, slots,
        exact);
  }

  /** A real run and its engines' adapter-slot account. */
  private record RealRun(MeasuredRun run, LoraSlots.Stats slots) {}

  private static RealRun runOnce(
      Workload w, ModelPlan plan, Settings s, String policy, boolean affine, PromptTokenizer tokenizer, String label,
      LoadProgress progress) throws IOException, InterruptedException {
    try (MultiModelFleet fleet =
        MultiModelFleet.start(
            w.fleet(), plan, s.adapterNames(), policy, affine, s.engineLoadInterval(), s.policies(), s.timeScale(),
            tokenizer)) {
      MeasuredRun run = LoadTest.run(
          w, LoadSettings.of(fleet.routerUri(), s.timeScale(), null), fleet.engineUris(), label, progress,
          session -> plan.binding(session).served());
      LoraSlots.Stats slots = LoraSlots.Stats.ZERO;
      for (URI engine : fleet.engineUris()) {
        slots = slots.plus(slotStats(engine));
      }
      return new RealRun(run, slots);
    }
  }

  /**
   * An engine's adapter-slot account from its {@code kvroute_mock_lora_*} counters (all 0 for an
   * engine that ran no adapter request).
   *
   * @throws IOException if the engine cannot be read
   */
  static LoraSlots.Stats slotStats(URI engine) throws IOException, InterruptedException {
    HttpResponse<String> r = HTTP.send(
        HttpRequest.newBuilder(engine.resolve("/metrics")).timeout(Duration.ofSeconds(10)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new IOException(engine + "/metrics: status " + r.statusCode());
    }
    java.util.Map<String, Double> v = new java.util.HashMap<>();
    for (Sample x : PrometheusText.samples(r.body(), n -> n.startsWith("kvroute_mock_lora_"))) {
      v.merge(x.name(), x.value(), Double::sum);
    }
    return new LoraSlots.Stats(
        Math.round(v.getOrDefault("kvroute_mock_lora_requests_total", 0.0)),
        Math.round(v.getOrDefault("kvroute_mock_lora_loads_total", 0.0)),
        Math.round(v.getOrDefault("kvroute_mock_lora_slot_waits_total", 0.0)),
        Math.round(v.getOrDefault("kvroute_mock_lora_slot_wait_seconds_total", 0.0) * 1e9),
        Math.round(v.getOrDefault("kvroute_mock_lora_load_waits_total", 0.0)),
        Math.round(v.getOrDefault("kvroute_mock_lora_load_wait_seconds_total", 0.0) * 1e9));
  }

  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private static RunReport report(Workload w, List<Simulator.ModelRun> runs) {
    List<PolicyFigures> figures = new ArrayList<>();
    for (Simulator.ModelRun r : runs) {
      figures.add(r.result().figures());
    }
    return new RunReport(w.name(), null, figures);
  }

  /** A short affine run on a throwaway fleet (the warm-up workload, its own model plan) that compiles the path. */
  static void warmUp(Settings s, PromptTokenizer tokenizer, PrintStream log) throws IOException, InterruptedException {
    SeedWorkloadConfig config = s.workload().warmUp();
    Workload w = SeedWorkload.generate(config, tokenizer);
    long t0 = System.nanoTime();
    MeasuredRun run =
        runOnce(w, s.plan(config), s, s.policyNames().get(0), true, tokenizer, "warm-up", LoadProgress.none()).run();
    RunTrust trust = RunTrust.of(run, s.timeScale(), RunTrust.DEFAULT_MAX_LAG_SECONDS);
    log.printf(Locale.ROOT, "warm-up at K = %s: %d requests in %.1f s; %s%n", RunTrust.fmt(s.timeScale()),
        w.requests(), (System.nanoTime() - t0) / 1e9, trust.trustworthy() ? "kept up" : "fell behind (lag "
            + String.format(Locale.ROOT, "%.3f", trust.worstLagSeconds()) + " model s)");
  }
}
