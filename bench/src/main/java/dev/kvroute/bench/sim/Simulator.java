package dev.kvroute.bench.sim;

import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.bench.workload.SideTraffic;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The discrete-event simulator: replays a workload under each policy in virtual time, every policy
 * against a fresh fleet of the mock engine's {@code EngineModel}s and the same sessions, and reports
 * the explainer's figures in model seconds.
 *
 * <p>Policies run independently (each owns its engines, router and clock), in parallel on up to
 * {@code threads} threads; the result does not depend on the thread count or order.
 *
 * <p>Thread-safe.
 */
public final class Simulator {
  private final PromptTokenizer tokenizer;
  private final SingleTokenVocabulary vocabulary;
  private final SimPolicies policies;
  private final int threads;
  private final boolean diagnose;
  private final SendJitter jitter;
  /** Model seconds between the router's reads of the adapter slots; 0 = live (multi-model runs). */
  private final double loraScrapeSeconds;

  /**
   * @param tokenizer the prompt tokenizer the router uses (shared, thread-safe)
   * @param vocabulary the words engines generate replies from
   * @param policies how each policy name becomes a router
   * @param threads policies simulated at once (at least 1)
   */
  public Simulator(
      PromptTokenizer tokenizer, SingleTokenVocabulary vocabulary, SimPolicies policies, int threads) {
    this(tokenizer, vocabulary, policies, threads, false);
  }

  /**
   * @param diagnose whether {@link SimDiagnostics#staleAtRoute()} and {@link
   *     SimDiagnostics#lostAtRoute()} are measured (one prefix lookup per engine and request;
   *     otherwise they are 0)
   */
  public Simulator(
      PromptTokenizer tokenizer,
      SingleTokenVocabulary vocabulary,
      SimPolicies policies,
      int threads,
      boolean diagnose) {
    this(tokenizer, vocabulary, policies, threads, diagnose, SendJitter.NONE, 0);
  }

  private Simulator(
      PromptTokenizer tokenizer,
      SingleTokenVocabulary vocabulary,
      SimPolicies policies,
      int threads,
      boolean diagnose,
      SendJitter jitter,
      double loraScrapeSeconds) {
    if (!(loraScrapeSeconds >= 0) || Double.isInfinite(loraScrapeSeconds)) {
      throw new IllegalArgumentException("loraScrapeSeconds: " + loraScrapeSeconds + " (expected: >= 0)");
    }
    this.loraScrapeSeconds = loraScrapeSeconds;
    this.jitter = jitter;
    this.diagnose = diagnose;
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.vocabulary = Objects.requireNonNull(vocabulary, "vocabulary");
    this.policies = Objects.requireNonNull(policies, "policies");
    if (threads < 1) {
      throw new IllegalArgumentException("threads: " + threads + " (expected: >= 1)");
    }
    this.threads = threads;
  }

  /** A simulator like this one whose requests are sent with {@code jitter}. */
  public Simulator withJitter(SendJitter jitter) {
    return new Simulator(tokenizer, vocabulary, policies, threads, diagnose, jitter, loraScrapeSeconds);
  }

  /**
   * A simulator like this one whose multi-model runs read the engines' adapter slots every {@code
   * modelSeconds} of model time, as the proxy's engine-load scrape does (its {@code
   * --engine-load-interval} times the engines' time scale), instead of live; {@code 0} reads them live.
   *
   * @throws IllegalArgumentException if {@code modelSeconds} is negative or not finite
   */
  public Simulator withLoraScrape(double modelSeconds) {
    return new Simulator(tokenizer, vocabulary, policies, threads, diagnose, jitter, modelSeconds);
  }

  /**
   * Simulates {@code workload} under {@code policy}.
   *
   * @throws IllegalArgumentException if the policy name is unknown
   */
  public PolicyFigures run(Workload workload, String policy) {
    return runDetailed(workload, policy).figures();
  }

  /** A policy's figures and what it did. */
  public record Result(PolicyFigures figures, SimDiagnostics diagnostics) {}

  /**
   * Simulates {@code workload} under {@code policy}, with diagnostics.
   *
   * @throws IllegalArgumentException if the policy name is unknown
   */
  public Result runDetailed(Workload workload, String policy) {
    policies.check(policy);
    Simulation sim =
        new Simulation(
            workload, vocabulary, fleet -> policies.router(policy, fleet, tokenizer), diagnose, jitter);
    PolicyFigures f = sim.run(policy);
    return new Result(f, sim.diagnostics(policy));
  }

  /**
   * Simulates {@code traffic}'s workload under {@code policy}, its side sessions sent straight to
   * their engines (no router sees them); figures and diagnostics are the routed sessions'.
   *
   * @throws IllegalArgumentException if the policy name is unknown
   */
  public Result runDetailed(SideTraffic traffic, String policy) {
    policies.check(policy);
    Simulation sim =
        new Simulation(
                traffic.workload(), vocabulary, fleet -> policies.router(policy, fleet, tokenizer), diagnose, jitter)
            .sideTraffic(traffic, tokenizer);
    PolicyFigures f = sim.run(policy);
    return new Result(f, sim.diagnostics(policy));
  }

  /**
   * As {@link #runAllDetailed(Workload, List)} with {@code traffic}'s side sessions bypassing the
   * routers ({@link #runDetailed(SideTraffic, String)}).
   *
   * @throws IllegalArgumentException if a policy name is unknown
   */
  public List<Result> runAllDetailed(SideTraffic traffic, List<String> policyNames) {
    policyNames.forEach(policies::check);
    return PolicyRuns.inParallel(policyNames, threads, p -> runDetailed(traffic, p));
  }

  /**
   * Simulates the multi-model {@code workload}, its models and adapters bound by {@code plan}, under
   * {@code policy}, with LoRA affinity on or off (as the router's {@code --lora-affinity}), with
   * diagnostics (whose records give each request's session, hence its model).
   *
   * @throws IllegalArgumentException if the policy name is unknown, or the plan's replicas are not the
   *     workload's fleet
   */
  public Result runDetailed(Workload workload, ModelPlan plan, boolean loraAffinity, String policy) {
    policies.check(policy);
    Objects.requireNonNull(plan, "plan");
    Simulation sim =
        new Simulation(
            workload, vocabulary, fleet -> policies.router(policy, fleet, tokenizer), diagnose, jitter, plan,
            loraAffinity, loraScrapeSeconds);
    PolicyFigures f = sim.run(policy);
    return new Result(f, sim.diagnostics(policy));
  }

  /**
   * One policy's run of a multi-model workload.
   *
   * @param policy the policy
   * @param loraAffinity whether LoRA affinity was on
   * @param result its figures (named {@link #label()}) and diagnostics
   */
  public record ModelRun(String policy, boolean loraAffinity, Result result) {
    /** The run's name in reports: {@code cache-aware, affine} or {@code cache-aware, blind}. */
    public String label() {
      return label(policy, loraAffinity);
    }

    public static String label(String policy, boolean loraAffinity) {
      return policy + (loraAffinity ? ", affine" : ", blind");
    }
  }

  /**
   * Simulates the multi-model {@code workload} under each of {@code policyNames}, each with LoRA
   * affinity on and then off, on up to {@code threads} threads: results in that order.
   *
   * @throws IllegalArgumentException if a policy name is unknown
   */
  public List<ModelRun> runModels(Workload workload, ModelPlan plan, List<String> policyNames) {
    policyNames.forEach(policies::check);
    List<String> runs = new ArrayList<>();
    for (int i = 0; i < policyNames.size() * 2; i++) {
      runs.add(Integer.toString(i));
    }
    return PolicyRuns.inParallel(runs, threads, i -> {
      int n = Integer.parseInt(i);
      String policy = policyNames.get(n / 2);
      boolean affine = n % 2 == 0;
      Result r = runDetailed(workload, plan, affine, policy);
      return new ModelRun(
          policy, affine, new Result(r.figures().withPolicy(ModelRun.label(policy, affine)), r.diagnostics()));
    });
  }

  /**
   * Simulates {@code workload} under each of {@code policyNames}, in that order in the report.
   *
   * @throws IllegalArgumentException if a policy name is unknown
   */
  public RunReport runAll(Workload workload, List<String> policyNames) {
    List<PolicyFigures> out = new ArrayList<>();
    for (Result r : runAllDetailed(workload, policyNames)) {
      out.add(r.figures());
    }
    return new RunReport(workload.name(), null, out);
  }

  /**
   * As {@link #runAll}, with each policy's diagnostics, in the order of {@code policyNames}.
   *
   * @throws IllegalArgumentException if a policy name is unknown
   */
  public List<Result> runAllDetailed(Workload workload, List<String> policyNames) {
    policyNames.forEach(policies::check);
    return PolicyRuns.inParallel(policyNames, threads, p -> runDetailed(workload, p));
  }
}
