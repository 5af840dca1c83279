package dev.kvroute.core.policy;

import java.util.List;
import java.util.random.RandomGenerator;

/**
 * {@code cache-aware} (and the simulator's {@code oracle}): SGLang's rule, see {@link Policies}.
 * Loads are balanced first; then the longest match wins if its fraction of the prompt is above the
 * threshold; otherwise the least loaded backend. Every tie is broken by a second key and then at
 * random.
 *
 * <p>With {@link PolicyConfig#foreignLoad()}, engine-reported foreign load (other routers, direct
 * clients) places requests but does not switch the rule: the imbalance check compares this router's
 * own loads ({@link LoadMeasure#own}), the hot spots its cache affinity can make and its balancing
 * can undo, while the least-loaded pick (on imbalance and on a miss) compares whole loads ({@link
 * LoadMeasure#of}). A backend kept busy by
 * others would otherwise hold the whole fleet in imbalance mode, every request sent away from its
 * cache (measured: {@code bench/scripts/foreign-load.sh}, docs/operations.md).
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
    long[] loads = loads(cs, config.loadMeasure(), config.foreignLoad());
    long[] own = config.foreignLoad() ? loads(cs, config.loadMeasure(), false) : loads;
    long max = Long.MIN_VALUE;
    long min = Long.MAX_VALUE;
    long foreign = 0;
    for (int i = 0; i < own.length; i++) {
      foreign += loads[i] - own[i];
    }
    for (long l : own) {
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
    long bestMatch = best;
    long maxLoad = max;
    long minLoad = min;
    long foreignLoad = foreign;
    int promptTokens = context.promptTokens();
    java.util.function.Supplier<String> detail = () ->
        "best match "
            + bestMatch
            + "/"
            + promptTokens
            + " = "
            + round3(ratio)
            + (ratio > config.cacheThreshold() ? " > " : " <= ")
            + config.cacheThreshold()
            + "; "
            + config.loadMeasure()
            + " load max "
            + maxLoad
            + " min "
            + minLoad
            + (imbalanced ? " imbalanced" : " balanced")
            + " (abs "
            + config.balanceAbsThreshold()
            + ", rel "
            + config.balanceRelThreshold()
            + ")"
            + (foreignLoad > 0 ? "; least loaded counts " + foreignLoad + " engine-reported foreign" : "");
    return decision(context, chosen, rule, detail);
  }

  private static double round3(double v) {
    return Math.round(v * 1000) / 1000.0;
  }
}
