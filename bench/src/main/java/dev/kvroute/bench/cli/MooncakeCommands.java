package dev.kvroute.bench.cli;

import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.LoadSettings;
import dev.kvroute.bench.load.LoadTest;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.report.Agreement;
import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.ReportDocument;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.report.Tables;
import dev.kvroute.bench.sim.OpenLoopSimulator;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.trace.BlockTokens;
import dev.kvroute.bench.trace.MooncakeConfig;
import dev.kvroute.bench.trace.MooncakeReplay;
import dev.kvroute.bench.trace.MooncakeTrace;
import dev.kvroute.bench.trace.MooncakeWorkload;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.server.MockEngineServer;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What {@code simulate} and {@code loadtest} do for {@code --workload mooncake}: read the trace, build
 * the replay, run it, print the explainer's table with the references (the trace's ideal hit rate with
 * an infinite cache, and the oracle's), and write the reports.
 *
 * <p>Thread-safe (stateless).
 */
final class MooncakeCommands {
  /** Wall-clock timing noise of the bundled harness the jittered predictions assume (times K in model time). */
  static final double JITTER_WALL_SECONDS = 0.01;

  /** Seed of the block tokens of the warm-up against a running router: prompts disjoint from the measured ones. */
  static final long WARM_UP_BLOCK_SEED = 0x7761726dL; // "warm"

  /** Jittered simulator runs beside the exact one. */
  static final int JITTER_RUNS = 3;

  private MooncakeCommands() {}

  /** {@code simulate --workload mooncake}: every policy of {@code names} in virtual time. */
  static int simulate(
      MooncakeConfig config, Path tracePath, SimPolicies policies, List<String> names, int threads,
      boolean diagnostics, ReportFiles outputs) throws IOException {
    long t0 = System.nanoTime();
    PromptTokenizer tokenizer = PromptTokenizer.create(Tokenizer.defaultTokenizer());
    MooncakeWorkload w = load(config, tracePath, tokenizer);
    try {
      policies.checkPages(names, w.fleet().blockSizeTokens());
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute simulate: " + e.getMessage());
      return 2;
    }
    MooncakeReplay.Simulated sim = MooncakeReplay.simulate(w, policies, names, threads, tokenizer);
    double wall = (System.nanoTime() - t0) / 1e9;

    PrintStream out = System.out;
    out.print(Tables.figures(sim.report()).plain());
    out.println();
    List<String> notes = new ArrayList<>();
    notes.add(references(w, sim.report()));
    notes.addAll(describe(w, policies));
    notes.add(busy(sim.report(), w));
    notes.add(String.format(Locale.ROOT, "Simulated in %.1f s of wall time (simulation %.1f s).", wall, sim.wallSeconds()));
    notes.forEach(out::println);
    if (diagnostics) {
      out.println();
      for (OpenLoopSimulator.Result r : sim.results()) {
        out.printf(
            Locale.ROOT, "%s: rules %s; requests per replica %s; predicted/actual cached tokens %.3f; %.0f model s%n",
            r.figures().policy(), r.details().rules(), r.details().requestsPerReplica(),
            predictedOverActual(r), r.details().makespanSeconds());
      }
    }
    outputs.write(new ReportDocument("kvroute simulate: Mooncake conversation trace", notes, sim.report(), null));
    return 0;
  }

  /**
   * {@code loadtest --workload mooncake}: against a running router ({@code target} and {@code engines}
   * given; one row named {@code label}), or else on a fresh bundled fleet per policy of {@code names};
   * either way with the simulator's prediction beside the measurement.
   */
  static int loadtest(
      MooncakeConfig config, Path tracePath, SimPolicies policies, List<String> names, URI target, List<URI> engines,
      String label, String model, double timeScale, Duration timeout, boolean warmUp, int threads, ReportFiles outputs)
      throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    PromptTokenizer tokenizer = MockEngineServer.sharedPromptTokenizer(Tokenizer.DEFAULT_ENCODING);
    MooncakeWorkload w = load(config, tracePath, tokenizer);
    PrintStream log = System.err;
    List<String> simNames = new ArrayList<>();
    boolean bundled = target == null;
    if (bundled) {
      simNames.addAll(names);
    } else if (Policies.names().contains(label)) {
      simNames.add(label);
    }
    simNames.add(SimPolicies.ORACLE);
    log.printf(
        Locale.ROOT, "kvroute loadtest: mooncake, %d requests over %.0f model s (%.0f wall s at time scale %s); simulating %s%n",
        w.size(), w.spanSeconds(), w.spanSeconds() / timeScale, timeScale, simNames);
    MooncakeReplay.Simulated sim = MooncakeReplay.simulate(w, policies, simNames, threads, tokenizer);
    List<String> jitteredNames = new ArrayList<>(simNames);
    jitteredNames.remove(SimPolicies.ORACLE);
    List<RunReport> jittered =
        jitteredNames.isEmpty()
            ? List.of()
            : MooncakeReplay.simulateJittered(
                w, policies, jitteredNames, threads, tokenizer, JITTER_WALL_SECONDS * timeScale, JITTER_RUNS);

    List<MeasuredRun> runs;
    RunReport measured;
    double realWall;
    if (bundled) {
      MooncakeReplay.Measured m =
          MooncakeReplay.runBundled(
              w, policies, names, timeScale, warmUp ? MooncakeReplay.DEFAULT_WARM_UP_WALL_SECONDS : 0, tokenizer, log,
              LoadProgress::terminal);
      runs = m.runs();
      measured = m.measured();
      realWall = m.wallSeconds();
    } else {
      long r0 = System.nanoTime();
      if (warmUp) {
        MooncakeReplay.warmUp(
            w.withBlockTokens(w.blockTokens().withSeed(WARM_UP_BLOCK_SEED)), target, engines, timeScale,
            MooncakeReplay.DEFAULT_WARM_UP_WALL_SECONDS, log);
      }
      MeasuredRun run =
          LoadTest.run(w, new LoadSettings(target, timeScale, model, timeout, 1), engines, label, LoadProgress.terminal(label));
      runs = List.of(run);
      measured = new RunReport(w.name(), timeScale, List.of(run.figures()));
      realWall = (System.nanoTime() - r0) / 1e9;
    }
    double wall = (System.nanoTime() - t0) / 1e9;

    PrintStream out = System.out;
    out.println();
    out.println("Measured through real HTTP (model seconds):");
    out.print(Tables.figures(measured).plain());
    out.println();
    out.println("Measured beside the simulator's prediction:");
    out.print(Tables.comparison(measured, sim.report()).plain());
    out.println();
    List<String> notes = new ArrayList<>();
    notes.add(references(w, sim.report()));
    notes.addAll(describe(w, policies));
    notes.add(
        String.format(
            Locale.ROOT,
            "Real runs: %s, time scale K = %s (model time = wall time x K); TTFT measured by the client, hit rate from "
                + "usage.prompt_tokens_details.cached_tokens, prefill seconds from each engine's vllm:request_prefill_time_seconds_sum.",
            bundled
                ? "for each policy a fresh fleet of " + w.fleet().replicas() + " mock engines and a kvroute router in one process on loopback"
                : "against " + target + (warmUp ? " after an unmeasured warm-up with prompts that share no prefix with the replay's" : ""),
            timeScale));
    notes.add(busy(measured, w));
    notes.add(crossCheck(runs));
    notes.add(agreement(measured, sim.report(), jittered, timeScale));
    notes.add(
        String.format(
            Locale.ROOT, "Wall time: %.0f s in total, %.0f s of it the real runs%s.", wall, realWall,
            warmUp ? " (warm-up included)" : ""));
    notes.forEach(out::println);
    outputs.write(new ReportDocument("kvroute loadtest: Mooncake conversation trace", notes, measured, sim.report()));
    return runs.stream().anyMatch(r -> r.load().errors() > 0) ? 1 : 0;
  }

  private static MooncakeWorkload load(MooncakeConfig config, Path tracePath, PromptTokenizer tokenizer)
      throws IOException {
    MooncakeTrace trace;
    try {
      trace = MooncakeTrace.read(tracePath);
    } catch (NoSuchFileException e) {
      throw new IOException("trace: " + tracePath + ": no such file", e);
    } catch (AccessDeniedException e) {
      throw new IOException("trace: " + tracePath + ": not readable (permission denied)", e);
    } catch (IOException e) {
      throw new IOException("trace: " + tracePath + ": cannot read it (" + e + ")", e);
    }
    return MooncakeWorkload.create(trace, config, BlockTokens.of(SingleTokenVocabulary.of(tokenizer.tokenizer())));
  }

  /** The references printed beside every run: the ideal hit rate of the replayed requests and the oracle's. */
  static String references(MooncakeWorkload w, RunReport simulated) {
    MooncakeTrace.IdealHitRate ideal = w.slice().idealHitRate();
    String oracle =
        simulated.policy(SimPolicies.ORACLE)
            .map(o -> String.format(Locale.ROOT, "%.1f%% (mean TTFT %.3f s)", o.hitRate() * 100, o.meanTtftSeconds()))
            .orElse("not simulated");
    return String.format(
        Locale.ROOT,
        "References: the replayed requests' ideal hit rate with one infinite cache is %.1f%% by block (%.1f%% of prompt tokens); "
            + "the oracle (cache-aware on the engines' true caches, simulated) gets %s.",
        ideal.byBlock() * 100, ideal.byToken() * 100, oracle);
  }

  /** What was replayed on what. */
  static List<String> describe(MooncakeWorkload w, SimPolicies policies) {
    PolicyConfig c = policies.config();
    MooncakeConfig m = w.config();
    List<String> notes = new ArrayList<>();
    notes.add(
        String.format(
            Locale.ROOT,
            "Workload mooncake: %d requests (%,d prompt tokens) from %s, minutes %s; arrivals %s over the trace's %.0f-second buckets "
                + "(seed %d), rate x%s, spanning %.0f model s; session keys: %s.",
            w.size(), w.promptTokens(), w.slice().source(), m.sliceText(), m.arrivals().cliName(), m.bucketSeconds(),
            m.seed(), trim(m.rateMultiplier()), w.spanSeconds(), m.sessionKeys().cliName()));
    notes.add(
        String.format(
            Locale.ROOT,
            "Engines: %d replicas, %s, %,d tokens of KV each, block %d, prefill %.0f tokens/s + %.3f s per request, decode %.0f tokens/s per request%s. "
                + "Routers' index pages: %d tokens. cache-aware: load = %s requests, balance abs %d rel %.2f, cache threshold %.2f; cost: prefill weight %.2f, decode weight %.2f x %d tokens.",
            w.fleet().replicas(), m.scheduler().cliName(), w.fleet().kvCapacityTokens(), w.fleet().blockSizeTokens(),
            m.prefillTokensPerSecond(), m.prefillOverheadSeconds(), m.decodeTokensPerSecond(),
            m.scheduler() == EngineConfig.SchedulerKind.CONTINUOUS
                ? ", " + m.maxNumBatchedTokens() + " batched tokens per step" : "",
            policies.pageSizeTokens(w.fleet().blockSizeTokens()),
            c.loadMeasure().configName(), c.balanceAbsThreshold(), c.balanceRelThreshold(), c.cacheThreshold(),
            c.prefillWeight(), c.decodeWeight(), c.decodeTokensPerRequest()));
    return notes;
  }

  /** Each policy's busy fraction: fleet prefill seconds over replicas × span. */
  static String busy(RunReport report, MooncakeWorkload w) {
    StringBuilder sb = new StringBuilder("Busy (fleet prefill seconds / (replicas x span)):");
    for (PolicyFigures p : report.policies()) {
      sb.append(String.format(Locale.ROOT, " %s %.0f%%,", p.policy(), MooncakeReplay.busy(p, w) * 100));
    }
    sb.setLength(sb.length() - 1);
    return sb.append('.').toString();
  }

  private static String crossCheck(List<MeasuredRun> runs) {
    StringBuilder sb = new StringBuilder("Cross-checks (usage hit rate vs the engines' vllm:prefix_cache_hits/queries; client vs engine mean TTFT):");
    for (MeasuredRun r : runs) {
      sb.append(
          String.format(
              Locale.ROOT, " %s %.1f%% vs %.1f%%, %.3f vs %.3f s%s;", r.figures().policy(), r.figures().hitRate() * 100,
              r.engineHitRate() * 100, r.figures().meanTtftSeconds(), r.engineMeanTtftSeconds(),
              r.load().errors() > 0 ? ", " + r.load().errors() + " FAILED" : ""));
    }
    sb.setLength(sb.length() - 1);
    return sb.append('.').toString();
  }

  /**
   * Agreement of each measured policy with the simulator (hit rate within 3 points, mean TTFT within
   * 15%): with the exact run, and with the range of the exact and the jittered runs.
   */
  private static String agreement(RunReport measured, RunReport exact, List<RunReport> jittered, double timeScale) {
    StringBuilder sb =
        new StringBuilder(
            String.format(
                Locale.ROOT,
                "Simulator agreement (hit rate within %.0f points, mean TTFT within %.0f%%), against the exact run and against the "
                    + "range of it and %d runs with arrivals delayed by up to %.0f wall ms (x K):",
                Agreement.MAX_HIT_RATE_POINTS, Agreement.MAX_MEAN_TTFT_RELATIVE * 100, jittered.size(),
                JITTER_WALL_SECONDS * 1000));
    int compared = 0;
    for (PolicyFigures real : measured.policies()) {
      PolicyFigures sim = exact.policy(real.policy()).orElse(null);
      if (sim == null) {
        continue;
      }
      compared++;
      List<PolicyFigures> range = new ArrayList<>();
      range.add(sim);
      for (RunReport j : jittered) {
        j.policy(real.policy()).ifPresent(range::add);
      }
      Agreement a = Agreement.of(real, sim);
      Agreement r = Agreement.ofRange(real, range);
      double ttftMin = range.stream().mapToDouble(PolicyFigures::meanTtftSeconds).min().orElseThrow();
      double ttftMax = range.stream().mapToDouble(PolicyFigures::meanTtftSeconds).max().orElseThrow();
      sb.append(
          String.format(
              Locale.ROOT, " %s %+.1f points, %+.1f%% %s (range %.3f..%.3f s: %+.1f points, %+.1f%% %s);", real.policy(),
              a.hitRatePoints(), a.meanTtftRelative() * 100, agrees(a) ? "yes" : "NO", ttftMin, ttftMax,
              r.hitRatePoints(), r.meanTtftRelative() * 100, agrees(r) ? "yes" : "NO"));
    }
    if (compared == 0) {
      return sb.append(" no simulated policy matches the label.").toString();
    }
    sb.setLength(sb.length() - 1);
    return sb.append('.').toString();
  }

  /** The trace replay's agreement criteria: hit rate and mean TTFT (busiest/mean is reported, not judged). */
  static boolean agrees(Agreement a) {
    return Math.abs(a.hitRatePoints()) <= Agreement.MAX_HIT_RATE_POINTS
        && Math.abs(a.meanTtftRelative()) <= Agreement.MAX_MEAN_TTFT_RELATIVE;
  }

  private static double predictedOverActual(OpenLoopSimulator.Result r) {
    long actual = r.details().actualCachedTokens();
    return actual == 0 ? 0 : (double) r.details().predictedCachedTokens() / actual;
  }

  private static String trim(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }
}
