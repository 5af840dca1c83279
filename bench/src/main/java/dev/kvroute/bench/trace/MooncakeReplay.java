package dev.kvroute.bench.trace;

import dev.kvroute.bench.demo.BundledFleet;
import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.LoadSettings;
import dev.kvroute.bench.load.LoadTest;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.sim.OpenLoopSimulator;
import dev.kvroute.bench.sim.SendJitter;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.bench.workload.OpenLoopWorkload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.engine.model.EngineConfig;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * Replays a Mooncake trace in the simulator and through real routers: the orchestration behind {@code
 * kvroute simulate --workload mooncake} and {@code kvroute loadtest --workload mooncake}.
 *
 * <p>A real run of several policies gives each policy a fresh {@link BundledFleet} (mock engines with
 * the workload's engine configuration and a kvroute router with the simulator's routing core, in this
 * process, on loopback) after a short warm-up run on a throwaway fleet, so that the JIT has compiled
 * the request path before anything is measured: at time scale K a millisecond of CPU is K
 * milliseconds of model time.
 *
 * <p>Not thread-safe; one replay at a time per JVM (the in-process engines share one tokenizer).
 */
public final class MooncakeReplay {
  /** The trace's file name in {@code shared/traces/}. */
  public static final String TRACE_FILE = "mooncake_conversation_trace.jsonl";

  /** Wall seconds of traffic the warm-up before the first measured run replays by default. */
  public static final double DEFAULT_WARM_UP_WALL_SECONDS = 10;

  /** Policies a real replay runs by default: the floor, SGLang's rule and Dynamo's cost. */
  public static final List<String> REAL_POLICIES = List.of("round-robin", "cache-aware", "cost");

  private MooncakeReplay() {}

  /**
   * The default trace: {@code shared/traces/mooncake_conversation_trace.jsonl} in the nearest ancestor
   * of the working directory, or else of the kvroute jar, that has it (the repository's {@code
   * ../shared/traces/}).
   *
   * @throws IllegalStateException if no ancestor has it (the message says where it looked)
   */
  public static Path defaultTrace() {
    List<Path> starts = new ArrayList<>();
    starts.add(Path.of("").toAbsolutePath());
    jarDirectory().ifPresent(starts::add);
    for (Path start : starts) {
      for (Path dir = start; dir != null; dir = dir.getParent()) {
        Path candidate = dir.resolve("shared").resolve("traces").resolve(TRACE_FILE);
        if (Files.isRegularFile(candidate)) {
          return candidate.normalize();
        }
      }
    }
    throw new IllegalStateException(
        "no shared/traces/" + TRACE_FILE + " above " + starts + " (expected: the repository's ../shared/traces/; pass --trace PATH)");
  }

  private static Optional<Path> jarDirectory() {
    try {
      var source = MooncakeReplay.class.getProtectionDomain().getCodeSource();
      return source == null ? Optional.empty() : Optional.ofNullable(Path.of(source.getLocation().toURI()).getParent());
    } catch (URISyntaxException | SecurityException | IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /**
   * The simulator's figures for a workload.
   *
   * @param report one row per policy, in the order asked
   * @param results each policy's figures and what it did, in the same order
   * @param wallSeconds wall time of the simulation
   */
  public record Simulated(RunReport report, List<OpenLoopSimulator.Result> results, double wallSeconds) {
    public Simulated {
      results = List.copyOf(results);
    }
  }

  /**
   * Simulates {@code workload} under each of {@code policies}.
   *
   * @throws IllegalArgumentException if a policy name is unknown
   */
  public static Simulated simulate(
      MooncakeWorkload workload, SimPolicies policies, List<String> names, int threads, PromptTokenizer tokenizer) {
    long t0 = System.nanoTime();
    List<OpenLoopSimulator.Result> results =
        new OpenLoopSimulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()), policies, threads)
            .runAll(workload, names);
    List<PolicyFigures> figures = new ArrayList<>();
    for (OpenLoopSimulator.Result r : results) {
      figures.add(r.figures());
    }
    return new Simulated(new RunReport(workload.name(), null, figures), results, (System.nanoTime() - t0) / 1e9);
  }

  /**
   * The spread of the simulator's figures under the timing noise of a real run: {@code runs} runs of
   * {@code names} with every arrival delayed by a uniform random {@code [0, jitterSeconds)} model
   * seconds (seeds 1..runs). Load-sensitive policies ({@code cache-aware}, {@code cost}) take different
   * but equally valid routes when arrivals move by milliseconds; a real run lands somewhere in this
   * spread, not on the exact run.
   *
   * @return one report per run, each with one row per policy in the order asked
   */
  public static List<RunReport> simulateJittered(
      MooncakeWorkload workload, SimPolicies policies, List<String> names, int threads, PromptTokenizer tokenizer,
      double jitterSeconds, int runs) {
    OpenLoopSimulator base =
        new OpenLoopSimulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()), policies, threads);
    List<RunReport> out = new ArrayList<>();
    for (long seed = 1; seed <= runs; seed++) {
      List<PolicyFigures> figures = new ArrayList<>();
      for (OpenLoopSimulator.Result r : base.withJitter(new SendJitter(jitterSeconds, seed)).runAll(workload, names)) {
        figures.add(r.figures());
      }
      out.add(new RunReport(workload.name(), null, figures));
    }
    return out;
  }

  /**
   * Real runs on bundled fleets.
   *
   * @param measured one row per policy, with the time scale
   * @param runs each run's details (engine counters, client errors, per-request records)
   * @param wallSeconds wall time of the runs, the warm-up included
   */
  public record Measured(RunReport measured, List<MeasuredRun> runs, double wallSeconds) {
    public Measured {
      runs = List.copyOf(runs);
    }
  }

  /**
   * Runs {@code workload} through a fresh bundled fleet and router for each of {@code names}, after a
   * warm-up of the workload's first {@code warmUpWallSeconds} (none for 0), logging to {@code log}.
   *
   * @param tokenizer the prompt tokenizer the in-process engines share ({@code
   *     MockEngineServer.sharedPromptTokenizer})
   * @throws IllegalArgumentException for {@code oracle} or an unknown policy
   * @throws IOException if an engine's metrics or the router cannot be read
   * @throws InterruptedException if interrupted
   */
  public static Measured runBundled(
      MooncakeWorkload workload, SimPolicies policies, List<String> names, double timeScale,
      double warmUpWallSeconds, PromptTokenizer tokenizer, PrintStream log, Function<String, LoadProgress> progress)
      throws IOException, InterruptedException {
    Objects.requireNonNull(workload, "workload");
    long t0 = System.nanoTime();
    if (warmUpWallSeconds > 0) {
      warmUp(workload, policies, timeScale, warmUpWallSeconds, tokenizer, log);
    }
    List<MeasuredRun> runs = new ArrayList<>();
    List<PolicyFigures> figures = new ArrayList<>();
    for (String policy : names) {
      long start = System.nanoTime();
      try (BundledFleet fleet =
          BundledFleet.start(workload.fleet(), workload.engine(), policy, policies, timeScale, tokenizer)) {
        MeasuredRun run =
            LoadTest.run(
                workload, LoadSettings.of(fleet.routerUri(), timeScale, null), fleet.engineUris(), policy,
                progress.apply(policy));
        runs.add(run);
        figures.add(run.figures());
        log.printf(
            Locale.ROOT, "%s: %d requests in %.0f s of wall time, latest send %.0f ms after its time%s%n",
            policy, run.figures().requests(), (System.nanoTime() - start) / 1e9, run.load().maxSendLateMillis(),
            run.load().errors() > 0 ? ", " + run.load().errors() + " failed, e.g. " + run.load().errorSamples() : "");
      }
    }
    return new Measured(
        new RunReport(workload.name(), timeScale, figures), runs, (System.nanoTime() - t0) / 1e9);
  }

  /**
   * The first {@code wallSeconds} of the workload's own traffic (replies cut to 64 tokens) on a
   * throwaway fleet, so that parsing, routing, streaming and the client are compiled before the first
   * measured run.
   */
  private static void warmUp(
      MooncakeWorkload workload, SimPolicies policies, double timeScale, double wallSeconds,
      PromptTokenizer tokenizer, PrintStream log) throws IOException, InterruptedException {
    try (BundledFleet fleet =
        BundledFleet.start(workload.fleet(), workload.engine(), "cache-aware", policies, timeScale, tokenizer)) {
      warmUp(workload, fleet.routerUri(), fleet.engineUris(), timeScale, wallSeconds, log);
    }
  }

  /**
   * Sends the first {@code wallSeconds} of {@code workload} (replies cut to 64 tokens) to {@code target}
   * and waits for them, unmeasured: JIT warm-up of a router, its engines and this client before a
   * measured run. Against the fleet that is then measured, pass a workload with other block tokens
   * ({@link MooncakeWorkload#withBlockTokens}): its prompts share no prefix with the measured ones, so
   * they only take cache room that least-recently-used eviction gives back first.
   *
   * @throws IOException if the target's model list or an engine's metrics cannot be read
   * @throws InterruptedException if interrupted
   */
  public static void warmUp(
      MooncakeWorkload workload, URI target, List<URI> engines, double timeScale, double wallSeconds,
      PrintStream log) throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    WarmUp w = new WarmUp(workload, wallSeconds * timeScale);
    LoadTest.run(w, LoadSettings.of(target, timeScale, null), engines, "warm-up", LoadProgress.none());
    log.printf(Locale.ROOT, "warm-up: %d requests in %.0f s%n", w.size(), (System.nanoTime() - t0) / 1e9);
  }

  /** The first {@code seconds} of a workload with replies of at most 64 tokens. */
  private static final class WarmUp implements OpenLoopWorkload {
    private final MooncakeWorkload w;
    private final int size;

    WarmUp(MooncakeWorkload w, double seconds) {
      this.w = w;
      int n = 0;
      while (n < w.size() && w.arrivalSeconds(n) < seconds) {
        n++;
      }
      this.size = Math.max(1, n);
    }

    @Override
    public String name() {
      return "warm-up";
    }

    @Override
    public FleetSpec fleet() {
      return w.fleet();
    }

    @Override
    public EngineConfig engine() {
      return w.engine();
    }

    @Override
    public int size() {
      return size;
    }

    @Override
    public double arrivalSeconds(int i) {
      return w.arrivalSeconds(i);
    }

    @Override
    public int[] promptTokens(int i) {
      return w.promptTokens(i);
    }

    @Override
    public int promptLength(int i) {
      return w.promptLength(i);
    }

    @Override
    public int maxTokens(int i) {
      return Math.min(64, w.maxTokens(i));
    }

    @Override
    public String sessionKey(int i) {
      return w.sessionKey(i);
    }
  }

  /** Busy fraction of a run: fleet prefill seconds over replicas × the workload's span. */
  public static double busy(PolicyFigures f, MooncakeWorkload w) {
    return f.fleetPrefillSeconds() / (w.fleet().replicas() * w.spanSeconds());
  }
}
