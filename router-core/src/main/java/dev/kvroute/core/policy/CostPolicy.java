package dev.kvroute.core.policy;

import dev.kvroute.core.load.BackendLoad;
import java.util.List;
import java.util.random.RandomGenerator;

/**
 * {@code cost}: Dynamo's KV-router cost, in tokens rather than blocks, see {@link Policies}; the
 * cheapest candidate wins, random among exact ties.
 */
final class CostPolicy extends AbstractPolicy {
  private final PolicyConfig config;

  CostPolicy(PolicyConfig config, RandomGenerator rng) {
    super("cost", rng);
    this.config = config;
  }

  @Override
  Decision decide(RoutingContext context, Draws draws, boolean commit) {
    List<Candidate> cs = context.candidates();
    double[] cost = new double[cs.size()];
    for (int i = 0; i < cost.length; i++) {
      cost[i] = cost(cs.get(i), context.promptTokens());
    }
    int chosen = Ties.argMin(cost, draws);
    StringBuilder detail = new StringBuilder("cost");
    for (int i = 0; i < cost.length; i++) {
      detail.append(' ').append(cs.get(i).backend()).append('=').append(Math.round(cost[i]));
    }
    return decision(context, chosen, Rule.COST, detail.toString());
  }

  private double cost(Candidate c, int promptTokens) {
    BackendLoad load = c.load();
    long uncached = promptTokens - matched(c, promptTokens);
    double prefill = (double) uncached + load.inFlightPrefillTokens();
    // a foreign request's prompt is unknown: it counts as one decode (see PolicyConfig)
    long foreign = config.foreignLoad() ? load.foreignRequests() : 0;
    double decode = ((double) load.activeDecodes() + foreign) * config.decodeTokensPerRequest();
    return config.prefillWeight() * prefill + config.decodeWeight() * decode;
  }
}
