package dev.kvroute.proxy.config;

/**
 * The routing policy and its thresholds.
 *
 * <p>Immutable and thread-safe.
 *
 * @param name one of {@code round-robin}, {@code random}, {@code least-loaded}, {@code power-of-two},
 *     {@code sticky}, {@code cache-aware} (default), {@code cost}
 * @param cacheThreshold cache-aware: the longest match counts as a hit only when matched tokens exceed
 *     this fraction of the prompt (SGLang's {@code --cache-threshold}, default 0.3)
 * @param balanceAbsThreshold cache-aware: loads count as imbalanced only when the busiest backend has
 *     more than this many in-flight requests above the idlest (SGLang's {@code --balance-abs-threshold},
 *     default 64)
 * @param balanceRelThreshold cache-aware: ...and more than this multiple of the idlest backend's
 *     in-flight requests (SGLang's {@code --balance-rel-threshold}, default 1.5)
 * @param seed seed of the policy's random generator (tie-breaks, random, power-of-two)
 */
public record PolicyConfig(
    String name,
    double cacheThreshold,
    int balanceAbsThreshold,
    double balanceRelThreshold,
    long seed) {

  public PolicyConfig {
    Checks.nonBlank("name", name);
    if (!(cacheThreshold >= 0 && cacheThreshold <= 1)) {
      throw new IllegalArgumentException("cacheThreshold: " + cacheThreshold + " (expected: 0..1)");
    }
    Checks.nonNegative("balanceAbsThreshold", balanceAbsThreshold);
    if (!(balanceRelThreshold >= 1) || Double.isInfinite(balanceRelThreshold)) {
      throw new IllegalArgumentException("balanceRelThreshold: " + balanceRelThreshold + " (expected: a finite number >= 1)");
    }
  }

  /** The defaults: cache-aware with SGLang's CLI thresholds (0.3, 64, 1.5) and seed 42. */
  public static PolicyConfig defaults() {
    return new PolicyConfig("cache-aware", 0.3, 64, 1.5, 42);
  }
}
