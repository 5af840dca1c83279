package dev.kvroute.bench.sim;

import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.bench.workload.OpenLoopWorkload;
import dev.kvroute.core.policy.Rule;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The discrete-event simulator for {@link OpenLoopWorkload}s (trace replay): every policy against a
 * fresh fleet of the workload's engine models, the same requests at the same arrival times, routed by
 * the same routers as {@link Simulator} builds ({@link SimPolicies}), figures in model seconds.
 *
 * <p>Policies run independently, in parallel on up to {@code threads} threads; the result does not
 * depend on the thread count or order.
 *
 * <p>Thread-safe.
 */
public final class OpenLoopSimulator {
  private final PromptTokenizer tokenizer;
  private final int[] replyTokenIds;
  private final SimPolicies policies;
  private final int threads;
  private final SendJitter jitter;

  /**
   * @param tokenizer the prompt tokenizer the router uses (shared, thread-safe)
   * @param vocabulary the words engines generate replies from
   * @param policies how each policy name becomes a router
   * @param threads policies simulated at once (at least 1)
   */
  public OpenLoopSimulator(
      PromptTokenizer tokenizer, SingleTokenVocabulary vocabulary, SimPolicies policies, int threads) {
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.policies = Objects.requireNonNull(policies, "policies");
    if (threads < 1) {
      throw new IllegalArgumentException("threads: " + threads + " (expected: >= 1)");
    }
    this.threads = threads;
    this.jitter = SendJitter.NONE;
    this.replyTokenIds = new int[vocabulary.size()];
    for (int i = 0; i < replyTokenIds.length; i++) {
      replyTokenIds[i] = vocabulary.tokenId(i);
    }
  }

  private OpenLoopSimulator(OpenLoopSimulator base, SendJitter jitter) {
    this.tokenizer = base.tokenizer;
    this.replyTokenIds = base.replyTokenIds;
    this.policies = base.policies;
    this.threads = base.threads;
    this.jitter = Objects.requireNonNull(jitter, "jitter");
  }

  /** A simulator like this one whose requests arrive with {@code jitter} added. */
  public OpenLoopSimulator withJitter(SendJitter jitter) {
    return new OpenLoopSimulator(this, jitter);
  }

  /**
   * What a policy did beyond the figures.
   *
   * @param rules requests per rule that decided them
   * @param requestsPerReplica requests each replica received, in fleet order
   * @param predictedCachedTokens sum over requests of the tokens the policy credited the chosen replica with
   * @param actualCachedTokens sum over requests of the tokens the chosen replica served from its cache
   * @param makespanSeconds model time from the start to the end of the last request
   * @param requests every request in completion order (session = request index, backend = {@code engine-i})
   */
  public record Details(
      Map<Rule, Long> rules,
      List<Long> requestsPerReplica,
      long predictedCachedTokens,
      long actualCachedTokens,
      double makespanSeconds,
      List<RequestRecord> requests) {
    public Details {
      requests = List.copyOf(requests);
      rules = Map.copyOf(rules.isEmpty() ? new EnumMap<>(Rule.class) : rules);
      requestsPerReplica = List.copyOf(requestsPerReplica);
    }
  }

  /** A policy's figures and what it did. */
  public record Result(PolicyFigures figures, Details details) {}

  /**
   * Simulates {@code workload} under {@code policy}.
   *
   * @throws IllegalArgumentException if the policy name is unknown
   */
  public Result run(OpenLoopWorkload workload, String policy) {
    policies.check(policy);
    OpenLoopSimulation sim =
        new OpenLoopSimulation(
            workload, replyTokenIds, jitter, fleet -> policies.router(policy, fleet, tokenizer));
    PolicyFigures f = sim.run(policy);
    return new Result(f, sim.details());
  }

  /**
   * Simulates {@code workload} under each of {@code policyNames}; results in that order.
   *
   * @throws IllegalArgumentException if a policy name is unknown
   */
  public List<Result> runAll(OpenLoopWorkload workload, List<String> policyNames) {
    policyNames.forEach(policies::check);
    return PolicyRuns.inParallel(policyNames, threads, p -> run(workload, p));
  }
}
