package dev.kvroute.core.policy;

/** Which rule of a policy decided a request; exported as the {@code rule} tag of routing metrics. */
public enum Rule {
  ROUND_ROBIN,
  RANDOM,
  LEAST_LOADED,
  POWER_OF_TWO,
  STICKY,
  /** cache-aware: the longest match was above the cache threshold. */
  CACHE_HIT,
  /** cache-aware: no match good enough; the least-loaded backend was taken. */
  CACHE_MISS,
  /** cache-aware: loads had drifted apart; balanced by load regardless of cache. */
  IMBALANCE,
  /** cost: the backend with the lowest estimated cost. */
  COST
}
