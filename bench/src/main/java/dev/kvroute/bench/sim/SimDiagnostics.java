package dev.kvroute.bench.sim;

import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.core.policy.Rule;
import dev.kvroute.engine.model.LoraSlots;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * What a policy did in one simulated run beyond the explainer's figures: how often each rule fired,
 * how many requests each replica got, and how the router's predicted cached tokens compare with what
 * the engine actually had (the approximate index's accuracy).
 *
 * <p>Immutable and thread-safe.
 *
 * @param policy the policy
 * @param rules requests per rule that decided them
 * @param requestsPerReplica requests each replica received, in fleet order
 * @param predictedCachedTokens sum over requests of the tokens the policy credited the chosen replica with
 * @param actualCachedTokens sum over requests of the tokens the chosen replica served from its cache
 * @param overPredictedRequests requests where the prediction exceeded the actual by more than one block
 * @param underPredictedRequests requests where the actual exceeded the prediction by more than one block
 * @param staleAtRoute requests whose prediction exceeded, by more than a block, what the chosen engine
 *     held at the decision instant (the index believed in a prefix already evicted)
 * @param lostAtRoute requests for which another engine held more than a block more of the prompt than
 *     the chosen one at the decision instant
 * @param lostTokensAtRoute the tokens those requests could have found cached on the best engine
 * @param modelSeconds model time from the start to the end of the last request
 * @param requests every completed request, in completion order
 * @param loraSlots each replica's adapter-slot account (loads, slot and load waits), in fleet order, as
 *     the mock engine counts it ({@code kvroute_mock_lora_*}); empty for a single-model run
 */
public record SimDiagnostics(
    String policy,
    Map<Rule, Long> rules,
    List<Long> requestsPerReplica,
    long predictedCachedTokens,
    long actualCachedTokens,
    long overPredictedRequests,
    long underPredictedRequests,
    long staleAtRoute,
    long lostAtRoute,
    long lostTokensAtRoute,
    double modelSeconds,
    List<RequestRecord> requests,
    List<LoraSlots.Stats> loraSlots) {
  public SimDiagnostics {
    requests = List.copyOf(requests);
    loraSlots = List.copyOf(loraSlots);
    rules = Map.copyOf(rules.isEmpty() ? new EnumMap<>(Rule.class) : rules);
    requestsPerReplica = List.copyOf(requestsPerReplica);
  }

  /** Diagnostics of a single-model run (no adapter slots). */
  public SimDiagnostics(
      String policy, Map<Rule, Long> rules, List<Long> requestsPerReplica, long predictedCachedTokens,
      long actualCachedTokens, long overPredictedRequests, long underPredictedRequests, long staleAtRoute,
      long lostAtRoute, long lostTokensAtRoute, double modelSeconds, List<RequestRecord> requests) {
    this(policy, rules, requestsPerReplica, predictedCachedTokens, actualCachedTokens, overPredictedRequests,
        underPredictedRequests, staleAtRoute, lostAtRoute, lostTokensAtRoute, modelSeconds, requests, List.of());
  }

  /** The fleet's adapter-slot account: the sum over replicas. */
  public LoraSlots.Stats loraSlotsTotal() {
    LoraSlots.Stats t = LoraSlots.Stats.ZERO;
    for (LoraSlots.Stats s : loraSlots) {
      t = t.plus(s);
    }
    return t;
  }
}
