package dev.kvroute.core.policy;

import java.util.List;
import java.util.random.RandomGenerator;

/**
 * {@code cache-aware} (and the simulator's {@code oracle}): SGLang's rule, see {@link Policies}.
 * Loads are balanced first; then the longest match wins if its fraction of the prompt is above the
 * threshold; otherwise the least loaded backend. Every tie is broken by a second key and then at
 * random.
 */
final class CacheAwarePolicy extends AbstractPolicy {
  private final PolicyConfig config;

  CacheAwarePolicy(String name, PolicyConfig config, RandomGenerator rng) {
    super(name, rng);
    this.config = config;
  }

  @Override
  Decision decide(RoutingContext context, Draws draws, boolean commit) {
    List<Candidate> cs = context.candidates();
    long[] loads = loads(cs, config.loadMeasure());
    long max = Long.MIN_VALUE;
    long min = Long.MAX_VALUE;
    for (long l : loads) {
      max = Math.max(max, l);
      min = Math.min(min, l);
    }
    long[] negMatches = negatedMatches(context);
    boolean imbalanced =
        max - min > config.balanceAbsThreshold() && max > config.balanceRelThreshold() * min;
    long best = 0;
    for (long m : negMatches) {
      best = Math.max(best, -m);
    }
    double ratio = context.promptTokens() == 0 ? 0 : (double) best / context.promptTokens();

    int chosen;
    Rule rule;
    if (imbalanced) {
      chosen = Ties.argMin(loads, negMatches, draws);
      rule = Rule.IMBALANCE;
    } else if (ratio > config.cacheThreshold()) {
      chosen = Ties.argMin(negMatches, loads, draws);
      rule = Rule.CACHE_HIT;
    } else {
      chosen = Ties.argMin(loads, negMatches, draws);
      rule = Rule.CACHE_MISS;
    }
    String detail =
        "best match "
            + best
            + "/"
            + context.promptTokens()
            + " = "
            + round3(ratio)
            + (ratio > config.cacheThreshold() ? " > " : " <= ")
            + config.cacheThreshold()
            + "; "
            + config.loadMeasure()
            + " load max "
            + max
            + " min "
            + min
            + (imbalanced ? " imbalanced" : " balanced")
            + " (abs "
            + config.balanceAbsThreshold()
            + ", rel "
            + config.balanceRelThreshold()
            + ")";
    return decision(context, chosen, rule, detail);
  }

  private static double round3(double v) {
    return Math.round(v * 1000) / 1000.0;
  }
}
