package dev.kvroute.bench.cli;

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
import java.io.IOException;
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
    ModelPlan plan = options.plan(w.fleet().replicas(), w.sessions().size(), config.seed());
    Simulator simulator =
        new Simulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()), policies, threads, diagnostics);
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
    List<String> notes = new ArrayList<>(SimulateCommand.notes(w, policies.config()));
    notes.add(describe(plan));
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
