package dev.kvroute.bench.cli;

import dev.kvroute.bench.demo.Demo;
import dev.kvroute.bench.demo.MultiModelDemo;
import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.load.RunTrust;
import dev.kvroute.bench.report.Agreement;
import dev.kvroute.bench.report.ModelBreakdown;
import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.ReportDocument;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.report.Tables;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.sim.Simulator;
import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.bench.report.TextTable;
import dev.kvroute.engine.model.LoraSlots;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What {@code simulate} does for {@code --workload multi-model}: the seed workload's sessions bound to
 * two base models and model B's adapters ({@link ModelPlan#twoModels}), every policy run with LoRA
 * affinity on ("affine") and off ("blind") against engines with {@code --max-loras} adapter slots,
 * the explainer's table of every run, the breakdown by model, and the reports.
 *
 * <p>Thread-safe (stateless).
 */
final class MultiModelCommands {
  /** The workload's name. */
  static final String NAME = "multi-model";

  private MultiModelCommands() {}

  /** The seed workload of {@code config} named {@value #NAME}. */
  static Workload workload(SeedWorkloadConfig config, PromptTokenizer tokenizer) {
    Workload seed = SeedWorkload.generate(config, tokenizer);
    return new Workload(NAME, seed.sessions(), seed.fleet(), seed.meanFinalHistoryTokens());
  }

  /** {@code simulate --workload multi-model}. */
  static int simulate(
      SeedWorkloadConfig config, MultiModelOptions options, SimPolicies policies, List<String> names, int threads,
      boolean diagnostics, ReportFiles outputs) throws IOException {
    long t0 = System.nanoTime();
    PromptTokenizer tokenizer = PromptTokenizer.create(Tokenizer.defaultTokenizer());
    Workload w = workload(config, tokenizer);
    try {
      policies.checkPages(names, w.fleet().blockSizeTokens());
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute simulate: " + e.getMessage());
      return 2;
    }
    ModelPlan plan = options.plan(w.fleet().replicas(), w.sessions().size(), config.seed());
    Simulator simulator =
        new Simulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()), policies, threads, diagnostics)
            .withLoraScrape(options.loraScrapeSeconds);
    List<Simulator.ModelRun> runs = simulator.runModels(w, plan, names);
    double wall = (System.nanoTime() - t0) / 1e9;

    List<PolicyFigures> figures = new ArrayList<>();
    List<ModelBreakdown> breakdowns = new ArrayList<>();
    for (Simulator.ModelRun r : runs) {
      figures.add(r.result().figures());
      breakdowns.add(ModelBreakdown.of(r.label(), plan, r.result().diagnostics().requests()));
    }
    RunReport report = new RunReport(w.name(), null, figures);
    PrintStream out = System.out;
    out.print(Tables.figures(report).plain());
    out.println();
    out.print(ModelBreakdown.table(breakdowns).plain());
    out.println();
    List<String> notes = new ArrayList<>(SimulateCommand.notes(w, policies));
    notes.add(describe(plan));
    notes.add(scrapeNote(options.loraScrapeSeconds));
    notes.add(String.format(Locale.ROOT, "Simulated in %.1f s of wall time.", wall));
    notes.forEach(out::println);
    if (diagnostics) {
      out.println();
      for (Simulator.ModelRun r : runs) {
        out.println(SimulateCommand.describe(r.result().diagnostics()));
      }
    }
    List<String> docNotes = new ArrayList<>(notes);
    docNotes.add("By model:\n\n" + ModelBreakdown.table(breakdowns).markdown());
    outputs.write(new ReportDocument("kvroute simulate: " + w.name() + " workload", docNotes, report, null));
    return 0;
  }

  /** The paragraph that says how often the router reads the adapter slots. */
  static String scrapeNote(double modelSeconds) {
    return modelSeconds > 0
        ? String.format(Locale.ROOT, "The router reads the engines' adapter slots (vllm:lora_requests_info) every %.2f model s, "
            + "as its engine-load scrape does; LoRA affinity decides on the last read.", modelSeconds)
        : "The router reads the engines' adapter slots live (--lora-scrape-seconds 0).";
  }

  /**
   * {@code demo --workload multi-model}, and {@code loadtest --workload multi-model} without {@code
   * --target}: each of {@code policyNames} affine and blind through real HTTP on fresh bundled fleets,
   * beside the simulator's prediction; prints the tables and returns the documents to write (the real
   * runs' page first, then the simulated runs').
   *
   * @throws IllegalArgumentException if the scrape interval at {@code timeScale} is below the router's
   *     100 ms minimum, or a model parameter is out of range
   */
  static Real real(
      SeedWorkloadConfig config, MultiModelOptions options, SimPolicies policies, List<String> policyNames,
      double timeScale, boolean warmUp, int jitterRuns, PrintStream log) throws IOException, InterruptedException {
    long t0 = System.nanoTime();
    if (options.dumpRequests != null) {
      checkWritable(options.dumpRequests); // before the runs, not after minutes of them
    }
    long intervalNanos = Math.round(options.loraScrapeSeconds / timeScale * 1e9);
    if (intervalNanos < 100_000_000L) {
      throw new IllegalArgumentException(String.format(
          Locale.ROOT, "--lora-scrape-seconds %s at time scale %s is a router scrape every %.0f wall ms (expected: >= 100 ms,"
              + " the router's minimum engine-load interval: give at least %s)",
          options.loraScrapeSeconds, RunTrust.fmt(timeScale), intervalNanos / 1e6,
          RunTrust.fmt(0.1 * timeScale)));
    }
    MultiModelDemo.Settings settings =
        new MultiModelDemo.Settings(
            config, options.adapters, options.baseShareOfB, options.maxLoras, options.loraLoadSeconds, policies,
            policyNames, timeScale, java.time.Duration.ofNanos(intervalNanos),
            Math.max(1, Runtime.getRuntime().availableProcessors()), warmUp, jitterRuns);
    MultiModelDemo.Result r = MultiModelDemo.run(settings, log, LoadProgress::terminal);
    double wall = (System.nanoTime() - t0) / 1e9;

    PrintStream o = System.out;
    o.println();
    o.println("Measured through real HTTP (model seconds):");
    o.print(Tables.figures(r.measured()).plain());
    o.println();
    o.println("Measured beside the simulator's prediction:");
    o.print(Tables.comparison(r.measured(), r.simulatedRange()).plain());
    o.println();
    o.println("By model, measured:");
    o.print(ModelBreakdown.table(r.measuredByModel()).plain());
    o.println();
    o.println("By model, simulated (exact run):");
    o.print(ModelBreakdown.table(r.simulatedByModel()).plain());
    o.println();
    TextTable slots = slotsTable(r);
    o.println("Adapter slots, measured / simulated (exact run):");
    o.print(slots.plain());
    o.println();
    if (options.dumpRequests != null) {
      dumpRequests(r, options.dumpRequests);
      o.println("Requests written to " + options.dumpRequests);
    }
    List<String> notes = new ArrayList<>(SimulateCommand.notes(r.workload(), policies));
    notes.add(describe(r.plan()));
    notes.add(String.format(
        Locale.ROOT,
        "Real runs: for each run a fresh fleet of %d mock engines (model B's with --lora-modules of its %d adapters, --max-loras %d, "
            + "adapter load %.2f model s) and a kvroute router on loopback that discovers them from /v1/models and scrapes their "
            + "/metrics every %d wall ms (%.2f model s); time scale K = %s.",
        r.workload().fleet().replicas(), options.adapters, options.maxLoras, options.loraLoadSeconds, intervalNanos / 1_000_000,
        options.loraScrapeSeconds, RunTrust.fmt(timeScale)));
    notes.add(scrapeNote(options.loraScrapeSeconds));
    StringBuilder check = new StringBuilder("Cross-check of the hit rate with the engines' vllm:prefix_cache_hits/queries:");
    for (MeasuredRun m : r.runs()) {
      check.append(String.format(
          Locale.ROOT, " %s %.1f%% (usage %.1f%%);", m.figures().policy(), m.engineHitRate() * 100,
          m.figures().hitRate() * 100));
      notes.add(RunTrust.of(m, timeScale, RunTrust.DEFAULT_MAX_LAG_SECONDS)
          .describe(m.figures().policy()));
    }
    notes.add(check.substring(0, check.length() - 1) + ".");
    long agree = Agreement.ofRange(r.measured(), r.simulatedRange()).stream().filter(Agreement::within).count();
    notes.add(String.format(
        Locale.ROOT,
        "Simulator agreement (hit rate within %.0f points, mean TTFT within %.0f%%, busiest/mean within %.2f) with the range "
            + "of the exact simulated run and %d with send times jittered by up to %.0f wall ms x K: %d of %d runs.",
        Agreement.MAX_HIT_RATE_POINTS, Agreement.MAX_MEAN_TTFT_RELATIVE * 100, Agreement.MAX_BUSIEST_DELTA,
        r.simulatedRange().size() - 1, Demo.JITTER_WALL_SECONDS * 1000, agree, r.measured().policies().size()));
    for (String p : policyNames) {
      notes.add(affineAgainstBlind(p, r.measured(), r.simulated()));
    }
    notes.add(String.format(Locale.ROOT, "Wall time: %.0f s in total, %.0f s of it the real runs.", wall, r.realWallSeconds()));
    notes.forEach(o::println);
    List<String> docNotes = new ArrayList<>(notes);
    docNotes.add("By model, measured:\n\n" + ModelBreakdown.table(r.measuredByModel()).markdown());
    docNotes.add("By model, simulated (exact run):\n\n" + ModelBreakdown.table(r.simulatedByModel()).markdown());
    docNotes.add("Adapter slots, measured / simulated (exact run):\n\n" + slots.markdown());
    ReportDocument doc = new ReportDocument(
        "kvroute: the multi-model workload through real sockets", docNotes, r.measured(), r.simulated(), r.simulatedRange());
    boolean errors = r.runs().stream().anyMatch(x -> x.load().errors() > 0);
    return new Real(r, doc, errors ? 1 : 0);
  }

  /**
   * Each real run's adapter-slot account beside its exact simulated run's: adapter requests, adapter
   * loads, requests that waited for a slot and for a load (with the mean wait, model seconds), and the
   * adapter requests after a session's first that went to another replica than its previous turn.
   */
  static TextTable slotsTable(MultiModelDemo.Result r) {
    TextTable t = new TextTable(List.of(
        "run", "adapter requests", "loads", "slot waits", "mean slot wait s", "load waits", "mean load wait s",
        "moved turns"));
    for (int i = 0; i < r.runs().size(); i++) {
      MeasuredRun m = r.runs().get(i);
      String label = m.figures().policy();
      Simulator.ModelRun sim =
          r.exact().stream().filter(x -> x.label().equals(label)).findFirst().orElseThrow();
      LoraSlots.Stats a = r.measuredSlots().get(i);
      LoraSlots.Stats b = sim.result().diagnostics().loraSlotsTotal();
      t.row(List.of(
          label, a.requests() + " / " + b.requests(), a.loads() + " / " + b.loads(),
          a.slotWaits() + " / " + b.slotWaits(),
          meanSeconds(a.slotWaitNanos(), a.slotWaits()) + " / " + meanSeconds(b.slotWaitNanos(), b.slotWaits()),
          a.loadWaits() + " / " + b.loadWaits(),
          meanSeconds(a.loadWaitNanos(), a.loadWaits()) + " / " + meanSeconds(b.loadWaitNanos(), b.loadWaits()),
          movedTurns(r.plan(), m.load().requests()) + " / "
              + movedTurns(r.plan(), sim.result().diagnostics().requests())));
    }
    return t;
  }

  private static String meanSeconds(long nanos, long count) {
    return count == 0 ? "-" : String.format(Locale.ROOT, "%.3f", nanos / 1e9 / count);
  }

  /** Adapter requests, after their session's first, that went to another replica than the turn before. */
  static long movedTurns(ModelPlan plan, List<RequestRecord> records) {
    java.util.Map<Long, String> byTurn = new java.util.HashMap<>();
    for (RequestRecord q : records) {
      byTurn.put(((long) q.session() << 32) | q.turn(), q.backend());
    }
    long moved = 0;
    for (RequestRecord q : records) {
      if (q.turn() == 0 || plan.binding(q.session()).adapter() == null) {
        continue;
      }
      String before = byTurn.get(((long) q.session() << 32) | (q.turn() - 1));
      if (before != null && !before.equals(q.backend())) {
        moved++;
      }
    }
    return moved;
  }

  /**
   * Creates {@code file} (empty) and its parent directories if missing, so that a {@code
   * --dump-requests} path that cannot be written is refused before a run rather than after it.
   *
   * @throws IllegalArgumentException if it is a directory, or it or a parent cannot be created or written
   */
  static void checkWritable(Path file) {
    if (Files.isDirectory(file)) {
      throw new IllegalArgumentException("--dump-requests: " + file + " is a directory (expected: a file to write)");
    }
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Files.newOutputStream(file, java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.WRITE)
          .close();
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("--dump-requests: " + file + " cannot be written (" + e
          + "; expected: a file in a writable directory)", e);
    }
  }

  /** Writes every request of every real run and its exact simulated run as CSV (see {@code --dump-requests}). */
  static void dumpRequests(MultiModelDemo.Result r, Path file) throws IOException {
    StringBuilder sb = new StringBuilder(
        "run,side,session,turn,model,adapter,sent_s,replica,ttft_s,prompt_tokens,cached_tokens\n");
    for (MeasuredRun m : r.runs()) {
      String label = m.figures().policy();
      appendRecords(sb, label, "real", r.plan(), m.load().requests());
      Simulator.ModelRun sim =
          r.exact().stream().filter(x -> x.label().equals(label)).findFirst().orElseThrow();
      appendRecords(sb, label, "sim", r.plan(), sim.result().diagnostics().requests());
    }
    Path parent = file.toAbsolutePath().getParent();
    if (parent != null) {
      Files.createDirectories(parent);
    }
    Files.writeString(file, sb);
  }

  private static void appendRecords(
      StringBuilder sb, String run, String side, ModelPlan plan, List<RequestRecord> records) {
    List<RequestRecord> sorted = new ArrayList<>(records);
    sorted.sort(java.util.Comparator.comparingInt(RequestRecord::session).thenComparingInt(RequestRecord::turn));
    for (RequestRecord q : sorted) {
      ModelPlan.Binding b = plan.binding(q.session());
      sb.append('"').append(run).append("\",").append(side).append(',').append(q.session()).append(',')
          .append(q.turn()).append(',').append(b.base()).append(',').append(b.adapter() == null ? "" : b.adapter())
          .append(',').append(String.format(Locale.ROOT, "%.4f", q.sentSeconds())).append(',')
          .append(q.backend() == null ? "" : q.backend()).append(',')
          .append(String.format(Locale.ROOT, "%.4f", q.ttftSeconds())).append(',').append(q.promptTokens())
          .append(',').append(q.cachedTokens()).append('\n');
    }
  }

  /** A real multi-model run's result, its report page and the command's exit code. */
  record Real(MultiModelDemo.Result result, ReportDocument document, int exitCode) {}

  /** One line: {@code policy}'s mean TTFT affine against blind, measured and simulated. */
  static String affineAgainstBlind(String policy, RunReport measured, RunReport simulated) {
    String affine = Simulator.ModelRun.label(policy, true);
    String blind = Simulator.ModelRun.label(policy, false);
    double ra = measured.policy(affine).orElseThrow().meanTtftSeconds();
    double rb = measured.policy(blind).orElseThrow().meanTtftSeconds();
    double sa = simulated.policy(affine).orElseThrow().meanTtftSeconds();
    double sb = simulated.policy(blind).orElseThrow().meanTtftSeconds();
    return String.format(
        Locale.ROOT,
        "%s: adapter-affine against adapter-blind mean TTFT: measured %.3f s against %.3f s (%s), simulated %.3f s against %.3f s (%s).",
        policy, ra, rb, ra < rb ? String.format(Locale.ROOT, "affine %.2fx faster", rb / ra) : "affine NOT faster",
        sa, sb, sa < sb ? String.format(Locale.ROOT, "affine %.2fx faster", sb / sa) : "affine NOT faster");
  }

  /** The paragraph that says how the models are laid out. */
  static String describe(ModelPlan plan) {
    long a = plan.sessions().stream().filter(b -> b.base().equals(ModelPlan.MODEL_A)).count();
    long adapters = plan.sessions().stream().filter(b -> b.adapter() != null).count();
    long distinct = plan.sessions().stream().filter(b -> b.adapter() != null).map(ModelPlan.Binding::adapter).distinct().count();
    return String.format(
        Locale.ROOT,
        "Models: %d replicas serve %s, %d serve %s; sessions: %d on %s, %d on %s itself, %d on %d of its adapters "
            + "(Zipf); engines: max-loras %d, adapter load %.2f s. affine = --lora-affinity on (llm-d's lora-affinity "
            + "scores, from the engines' adapter slots), blind = off.",
        plan.replicasOf(ModelPlan.MODEL_A).size(), ModelPlan.MODEL_A, plan.replicasOf(ModelPlan.MODEL_B).size(),
        ModelPlan.MODEL_B, a, ModelPlan.MODEL_A, plan.sessions().size() - a - adapters, ModelPlan.MODEL_B, adapters,
        distinct, plan.maxLoras(), plan.loraLoadSeconds());
  }
}
