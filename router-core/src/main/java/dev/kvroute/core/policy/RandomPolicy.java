package dev.kvroute.core.policy;

import java.util.random.RandomGenerator;

/** {@code random}: a uniform draw over the candidates. */
final class RandomPolicy extends AbstractPolicy {
  RandomPolicy(RandomGenerator rng) {
    super("random", rng);
  }

  /** Nothing of the prompt: the number of candidates only. */
  @Override
  public PromptReads reads(String sessionKey) {
    return PromptReads.NONE;
  }

  @Override
  Decision decide(RoutingContext context, Draws draws, boolean commit) {
    int n = context.candidates().size();
    int chosen = n == 1 ? 0 : draws.nextInt(n);
    return decision(context, chosen, Rule.RANDOM, "uniform over " + n);
  }
}
