package dev.kvroute.bench.cli;

import dev.kvroute.bench.report.ReportDocument;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.report.Tables;
import dev.kvroute.bench.sim.SimDiagnostics;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.sim.Simulator;
import dev.kvroute.bench.trace.MooncakeWorkload;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SideTraffic;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code kvroute simulate}: replays a workload under each policy in virtual time (router-core's
 * policies against the mock engine's engine model) and prints the explainer's table. Round-robin and
 * the oracle are always included as the floor and ceiling references.
 *
 * <p>Not thread-safe (a picocli command object).
 */
@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    description = {
      "Replay a workload under every routing policy in virtual time and print the explainer's table.",
      "Example: kvroute simulate --workload seed --json sim.json --markdown sim.md --html sim.html"
    },
    sortOptions = false)
public final class SimulateCommand implements Callable<Integer> {
  /** Policies simulated by default, the references first and last. */
  static final List<String> DEFAULT_POLICIES =
      List.of("round-robin", "sticky", "cache-aware", "cost", "least-loaded", SimPolicies.ORACLE);

  @Option(names = "--workload", paramLabel = "NAME", description = "Workload: seed, mooncake (the Mooncake conversation trace; see the mooncake flags), or multi-model (two base models, one with LoRA adapters; see the multi-model flags) (default: ${DEFAULT-VALUE}).")
  String workload = SeedWorkload.NAME;

  @Option(names = "--policies", paramLabel = "P[,P...]", split = ",", description = "Policies to simulate (default: round-robin, sticky, cache-aware, cost, least-loaded, oracle); round-robin and oracle are always added.")
  List<String> policies = DEFAULT_POLICIES;

  @Option(names = "--routers", paramLabel = "N",
      description = "Router replicas in front of the fleet, each with its own index and loads; requests split round-robin across them, so a session's turns visit every one (default: ${DEFAULT-VALUE}). A policy named P/precise runs over KV events (e.g. cache-aware/precise).")
  int routers = 1;

  @Option(names = "--threads", paramLabel = "N", description = "Policies simulated at once (default: ${DEFAULT-VALUE}).")
  int threads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors()));

  @Mixin ReportFiles reports;

  @Option(names = "--diagnostics", description = "Also print each policy's rules, requests per replica and index accuracy.")
  boolean diagnostics;

  @Option(names = "--speculative-ttl", paramLabel = "SECONDS", description = "Model seconds a precise router's speculative entries live (a real router's 2 wall seconds are 2 x K model seconds against engines at time scale K) (default: ${DEFAULT-VALUE}).")
  double speculativeTtl = SimPolicies.PreciseTiming.DEFAULT.speculativeTtlSeconds();

  @Option(names = "--event-delay", paramLabel = "SECONDS", description = "Model seconds from an engine step to a precise router applying its KV events (default: ${DEFAULT-VALUE}).")
  double eventDelay = SimPolicies.PreciseTiming.DEFAULT.eventDelaySeconds();

  @Option(names = "--send-jitter", paramLabel = "SECONDS", description = "Delay every request's send by up to this many model seconds (uniform, seeded), as a load driver that falls behind sends late (default: ${DEFAULT-VALUE}).")
  double sendJitter;

  @Option(names = "--side-load", paramLabel = "SHARE", description = "Traffic no router sees: SHARE one-shot side requests per routed session (e.g. 1), each a new document sent straight to one engine (spread evenly), arriving over 200 model s; the figures are the routed sessions' (default: ${DEFAULT-VALUE}).")
  double sideLoad;

  @Mixin SeedWorkloadOptions.SeedOrTrace seedOptions;

  @Mixin PolicyOptions policyOptions;

  @Mixin MooncakeOptions mooncakeOptions;

  @Mixin MultiModelOptions multiModelOptions;

  @Override
  public Integer call() throws java.io.IOException {
    if (MooncakeWorkload.NAME.equals(workload)) {
      return MooncakeCommands.simulate(
          mooncakeOptions.config(seedOptions.config()), mooncakeOptions.tracePath(), policyOptions.policies(),
          withReferences(policies), threads, diagnostics, reports);
    }
    if (MultiModelCommands.NAME.equals(workload)) {
      return MultiModelCommands.simulate(
          seedOptions.config(), multiModelOptions, policyOptions.policies(), withReferences(policies), threads,
          diagnostics, reports);
    }
    if (!SeedWorkload.NAME.equals(workload)) {
      System.err.println("kvroute simulate: --workload " + workload + " (expected: seed, mooncake or multi-model)");
      return 2;
    }
    long t0 = System.nanoTime();
    PromptTokenizer tokenizer = PromptTokenizer.create(Tokenizer.defaultTokenizer());
    Workload w = SeedWorkload.generate(seedOptions.config(), tokenizer);
    long t1 = System.nanoTime();
    SimPolicies sp;
    try {
      sp = policyOptions.policies().withRouters(routers)
          .withPrecise(new SimPolicies.PreciseTiming(speculativeTtl, eventDelay));
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute simulate: " + e.getMessage());
      return 2;
    }
    List<String> names = withReferences(policies);
    try {
      sp.checkPages(names, w.fleet().blockSizeTokens());
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute simulate: " + e.getMessage());
      return 2;
    }
    Simulator simulator =
        new Simulator(tokenizer, SingleTokenVocabulary.of(tokenizer.tokenizer()), sp, threads, diagnostics);
    SideTraffic side;
    try {
      side = SideTraffic.of(w, seedOptions.config(), sideLoad, tokenizer);
    } catch (IllegalArgumentException e) {
      System.err.println("kvroute simulate: --side-load: " + e.getMessage());
      return 2;
    }
    if (sendJitter != 0) {
      try {
        simulator = simulator.withJitter(new dev.kvroute.bench.sim.SendJitter(sendJitter, 1));
      } catch (IllegalArgumentException e) {
        System.err.println("kvroute simulate: --send-jitter: " + e.getMessage());
        return 2;
      }
    }
    List<Simulator.Result> results =
        side.sideSessions() == 0 ? simulator.runAllDetailed(w, names) : simulator.runAllDetailed(side, names);
    List<dev.kvroute.bench.report.PolicyFigures> figures = new ArrayList<>();
    for (Simulator.Result r : results) {
      figures.add(r.figures());
    }
    RunReport report = new RunReport(w.name(), null, figures);
    double seconds = (System.nanoTime() - t0) / 1e9;

    PrintStream out = System.out;
    out.print(Tables.figures(report).plain());
    out.println();
    List<String> notes = notes(w, sp);
    if (routers > 1) {
      notes.add(routers + " router replicas, requests split round-robin across them (the oracle is one router); "
          + "P/precise = policy P over the engines' KV events.");
    }
    if (side.sideSessions() > 0) {
      notes.add(sideNote(side));
    }
    for (String n : notes) {
      out.println(n);
    }
    out.printf(
        Locale.ROOT, "Simulated in %.1f s of wall time (workload generation %.1f s).%n", seconds, (t1 - t0) / 1e9);
    if (diagnostics) {
      out.println();
      for (Simulator.Result r : results) {
        out.println(describe(r.diagnostics()));
      }
    }
    ReportDocument doc =
        new ReportDocument("kvroute simulate: " + w.name() + " workload", notes, report, null);
    reports.write(doc);
    return 0;
  }

  /** What the side traffic was. */
  static String sideNote(SideTraffic side) {
    int replicas = side.workload().fleet().replicas();
    return String.format(
        Locale.ROOT,
        "Side load: %d one-shot requests (a new document each) sent straight to the engines over %.0f model s, "
            + "%d per engine, which no router sees; the figures are the %d routed sessions' (%d requests).",
        side.workload().requests() - side.routedRequests(), SideTraffic.WINDOW_SECONDS,
        (side.sideSessions() + replicas - 1) / replicas, side.routedSessions(), side.routedRequests());
  }

  /** {@code names} with round-robin first and the oracle last, each once. */
  static List<String> withReferences(List<String> names) {
    List<String> out = new ArrayList<>();
    out.add("round-robin");
    for (String n : names) {
      if (!out.contains(n) && !SimPolicies.ORACLE.equals(n)) {
        out.add(n);
      }
    }
    out.add(SimPolicies.ORACLE);
    return out;
  }

  /** The paragraphs that say what was run. */
  static List<String> notes(Workload w, SimPolicies policies) {
    PolicyConfig c = policies.config();
    List<String> notes = new ArrayList<>();
    notes.add(
        String.format(
            Locale.ROOT,
            "Workload %s: %d sessions, %d requests, on %d replicas with %,d tokens of KV cache each (%.0f tokens = mean final session history).",
            w.name(), w.sessions().size(), w.requests(), w.fleet().replicas(), w.fleet().kvCapacityTokens(),
            w.meanFinalHistoryTokens()));
    notes.add(
        String.format(
            Locale.ROOT,
            "Engines: fcfs-prefill, prefill %.0f tokens/s + %.3f s per request, decode %.0f tokens/s per request, block %d. "
                + "Routers' index pages: %d tokens. cache-aware: load = %s requests, balance abs %d rel %.2f, cache threshold %.2f. oracle = cache-aware on the engines' true caches.",
            w.fleet().prefillTokensPerSecond(), w.fleet().prefillOverheadSeconds(), w.fleet().decodeTokensPerSecond(),
            w.fleet().blockSizeTokens(), policies.pageSizeTokens(w.fleet().blockSizeTokens()),
            c.loadMeasure().configName(), c.balanceAbsThreshold(), c.balanceRelThreshold(), c.cacheThreshold()));
    return notes;
  }

  static String describe(SimDiagnostics d) {
    return String.format(
        Locale.ROOT,
        "%s: rules %s; requests per replica %s; predicted/actual cached tokens %s; stale at route %d, better replica missed %d (%,d tokens); %.0f model s",
        d.policy(), d.rules(), d.requestsPerReplica(),
        new dev.kvroute.bench.load.IndexAccuracy(d.predictedCachedTokens(), d.actualCachedTokens()).ratioText(),
        d.staleAtRoute(), d.lostAtRoute(), d.lostTokensAtRoute(), d.modelSeconds());
  }
}
