package dev.kvroute.core.policy;

import java.util.List;
import java.util.Objects;
import java.util.random.RandomGenerator;

/**
 * Creates routing policies by their configuration name.
 *
 * <ul>
 *   <li>{@code round-robin}: the candidate after the last chosen one, in name order (SGLang's shared
 *       counter for a fixed fleet, and fair across retries).
 *   <li>{@code random}: uniform over the candidates.
 *   <li>{@code least-loaded}: the lowest {@link PolicyConfig#loadMeasure() load}; random among ties.
 *   <li>{@code power-of-two}: the less loaded of two distinct random candidates.
 *   <li>{@code sticky}: the session key, or without one the hash of the prompt's first 16 tokens, on a
 *       consistent-hash ring of the candidates ({@link PolicyConfig#virtualNodes()} points each):
 *       a backend leaving moves only its own keys.
 *   <li>{@code cache-aware}: SGLang's rule ({@code select_worker} in
 *       {@code sgl-model-gateway/src/policies/cache_aware.rs}, Jan 2026; {@code
 *       reference/sglang-router.md} §1.4). With {@code max} and {@code min} the highest and lowest
 *       load over the candidates: if {@code max - min > balanceAbsThreshold} and {@code max >
 *       balanceRelThreshold × min}, rule {@code IMBALANCE}: the least loaded candidate. Otherwise,
 *       if the longest match's fraction of the prompt is {@code > cacheThreshold}, rule {@code
 *       CACHE_HIT}: the longest match. Otherwise rule {@code CACHE_MISS}: the least loaded (SGLang
 *       since PR #14650; before, the smallest tree). Unlike SGLang, every candidate's match is
 *       known, not just one tenant's, and ties are never broken by list order: least loaded ties
 *       go to the longest match, longest-match ties to the least loaded, and what remains tied to
 *       a draw from the injected generator. With {@link PolicyConfig#foreignLoad()}, {@code max}
 *       and {@code min} stay over this router's own loads while "least loaded" counts the
 *       engine-reported foreign load too (see {@link CacheAwarePolicy}).
 *   <li>{@code cost}: Dynamo's KV-router cost ({@code reference/dynamo-router.md} §1.1, Gen 1/2 with
 *       default weights: prefill blocks not cached plus active prefill blocks plus active decode
 *       blocks) in tokens: {@code cost = prefillWeight × (promptTokens − matchedTokens +
 *       inFlightPrefillTokens) + decodeWeight × (activeDecodes + foreignRequests) ×
 *       decodeTokensPerRequest}, {@code foreignRequests} counted only with {@link
 *       PolicyConfig#foreignLoad()}; the cheapest wins, random among exact ties. Dynamo counts each
 *       worker's active KV blocks; the router here counts active decodes and charges each
 *       {@code decodeTokensPerRequest}. A foreign request (engine-reported, not sent by this router)
 *       has an unknown prompt, so it is charged as one decode.
 * </ul>
 *
 * <p>The simulator's {@code oracle} is {@code cache-aware} fed with candidates whose matched tokens
 * come from the engines' true caches; {@code create("oracle", ...)} returns that rule under that
 * name. It is not in {@link #names()}, because only the simulator can feed it.
 *
 * <p>Every policy is thread-safe; it draws randomness only from the generator given here, under a
 * lock, so one seeded run repeats exactly.
 */
public final class Policies {
  /** The policy the proxy uses unless configured otherwise. */
  public static final String DEFAULT = "cache-aware";

  /** The simulator-only name of the cache-aware rule fed with true cache state. */
  public static final String ORACLE = "oracle";

  private static final List<String> NAMES =
      List.of("round-robin", "random", "least-loaded", "power-of-two", "sticky", "cache-aware", "cost");

  private Policies() {}

  /** The names {@link #create} accepts in configuration, in a stable order. */
  public static List<String> names() {
    return NAMES;
  }

  /**
   * A new policy named {@code name}, configured by {@code config}, drawing from {@code rng}. The name
   * is given apart from {@code config.name()} so that one configuration builds every policy (the
   * simulator's comparisons); the router passes {@code config.name()}.
   *
   * @throws IllegalArgumentException for an unknown name, listing the known ones
   */
  public static RoutingPolicy create(String name, PolicyConfig config, RandomGenerator rng) {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(rng, "rng");
    switch (name) {
      case "round-robin":
        return new RoundRobinPolicy(rng);
      case "random":
        return new RandomPolicy(rng);
      case "least-loaded":
        return new LeastLoadedPolicy(config.loadMeasure(), config.foreignLoad(), rng);
      case "power-of-two":
        return new PowerOfTwoPolicy(config.loadMeasure(), config.foreignLoad(), rng);
      case "sticky":
        return new StickyPolicy(config.virtualNodes(), rng);
      case "cache-aware":
        return new CacheAwarePolicy("cache-aware", config, rng);
      case ORACLE:
        return new CacheAwarePolicy(ORACLE, config, rng);
      case "cost":
        return new CostPolicy(config, rng);
      default:
        throw new IllegalArgumentException(
            "policy: " + name + " (expected: one of " + String.join(", ", NAMES) + ")");
    }
  }
}
