package dev.kvroute.bench.sim;

import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.core.policy.Rule;
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
    List<RequestRecord> requests) {
  public SimDiagnostics {
    requests = List.copyOf(requests);
    rules = Map.copyOf(rules.isEmpty() ? new EnumMap<>(Rule.class) : rules);
    requestsPerReplica = List.copyOf(requestsPerReplica);
  }
}
