package dev.kvroute.core.policy;

import java.util.random.RandomGenerator;

/**
 * {@code power-of-two}: two distinct candidates drawn at random, the less loaded one taken; a coin
 * flip on equal loads (SGLang's takes the first draw, which is equally random).
 */
final class PowerOfTwoPolicy extends AbstractPolicy {
  private final LoadMeasure measure;
  private final boolean foreign;

  PowerOfTwoPolicy(LoadMeasure measure, boolean foreign, RandomGenerator rng) {
    super("power-of-two", rng);
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
    int n = context.candidates().size();
    if (n == 1) {
      return decision(context, 0, Rule.POWER_OF_TWO, "single candidate");
    }
    int a = draws.nextInt(n);
    int b = draws.nextInt(n - 1);
    if (b >= a) {
      b++;
    }
    long la = measure.of(context.candidates().get(a).load(), foreign);
    long lb = measure.of(context.candidates().get(b).load(), foreign);
    int chosen;
    if (la != lb) {
      chosen = la < lb ? a : b;
    } else {
      chosen = draws.nextInt(2) == 0 ? a : b;
    }
    String detail =
        measure
            + " load "
            + context.candidates().get(a).backend()
            + "="
            + la
            + " vs "
            + context.candidates().get(b).backend()
            + "="
            + lb;
    return decision(context, chosen, Rule.POWER_OF_TWO, detail);
  }
}
