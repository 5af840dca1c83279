package dev.kvroute.core.policy;

import java.util.random.RandomGenerator;

/** {@code least-loaded}: the candidate with the lowest load measure; random among ties. */
final class LeastLoadedPolicy extends AbstractPolicy {
  private final LoadMeasure measure;
  private final boolean foreign;

  LeastLoadedPolicy(LoadMeasure measure, boolean foreign, RandomGenerator rng) {
    super("least-loaded", rng);
    this.measure = measure;
    this.foreign = foreign;
  }

  /** Nothing of the prompt: the candidates' loads only. */
  @Override
  public PromptReads reads(String sessionKey) {
    return PromptReads.NONE;
  }

  @Override
  Decision decide(RoutingContext context, Draws draws, boolean commit) {
    long[] loads = loads(context.candidates(), measure, foreign);
    int chosen = Ties.argMin(loads, null, draws);
    long load = loads[chosen];
    return decision(context, chosen, Rule.LEAST_LOADED, () -> measure + " load " + load);
  }
}
