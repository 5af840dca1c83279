package dev.kvroute.core.policy;

/**
 * The routing policy, its thresholds and weights, and its seed: what {@link Policies#create} builds a
 * policy from (each policy reads the fields it needs), and the {@code policy} block of the router's
 * YAML configuration and flags, field for field.
 *
 * <p>{@code cache-aware} (SGLang's rule, see {@link Policies}): the defaults 0.3 / 64 / 1.5 are the
 * values SGLang's router CLI and Python launcher have given users since PR #9198 (Aug 2025), as
 * recorded in {@code reference/sglang-router.md} §1.4 ({@code CacheAwareConfig::default()} in Rust
 * says 0.5 / 32 / 1.1, the Dec 2024 release 0.5 / 32 / 1.0001). The seed explainer's replicas each
 * prefill one request at a time; its table is reproduced with {@link LoadMeasure#PREFILLING_REQUESTS}
 * and thresholds abs 3, rel 1.5.
 *
 * <p>{@code cost} (Dynamo's KV router, see {@link Policies}): Dynamo's defaults weigh prefill and
 * decode blocks equally ({@code overlap_score_weight} / {@code prefill_load_scale} 1.0,
 * {@code reference/dynamo-router.md} §1.1, §1.3); {@code decodeTokensPerRequest} stands for the KV
 * footprint of one running request, which Dynamo tracks block by block and kvroute approximates.
 *
 * <p>Immutable and thread-safe.
 *
 * @param name the policy: one of {@link Policies#names()}, {@code cache-aware} by default (checked by
 *     {@link Policies#create}; only blankness here)
 * @param cacheThreshold {@code cache-aware}: the best candidate's matched fraction of the prompt
 *     must exceed this (strictly, as in SGLang) for a cache hit; 0..1
 * @param balanceAbsThreshold {@code cache-aware}: loads are imbalanced only when the busiest minus
 *     the least busy candidate exceeds this (strictly), in units of the load measure; {@code >= 0}
 * @param balanceRelThreshold {@code cache-aware}: ... and the busiest exceeds this many times the
 *     least busy (strictly); {@code >= 1}
 * @param loadMeasure what {@code cache-aware}, {@code least-loaded} and {@code power-of-two} compare
 * @param virtualNodes {@code sticky}: points per backend on the consistent-hash ring; {@code >= 1}
 * @param prefillWeight {@code cost}: weight of a prefill token (uncached prompt tokens plus the
 *     backend's in-flight prefill tokens); {@code >= 0}
 * @param decodeWeight {@code cost}: weight of a decode token-equivalent; {@code >= 0}
 * @param decodeTokensPerRequest {@code cost}: tokens of KV each active decode (and each foreign
 *     request an engine reports) is taken to hold; {@code >= 0}
 * @param foreignLoad whether load-based rules count the engine-reported load this router did not
 *     send ({@link dev.kvroute.core.load.BackendLoad#foreignRequests()}); off by default, see
 *     {@link LoadMeasure#of}
 * @param seed seed of the policy's random generator (ties, {@code random}, {@code power-of-two}); the
 *     caller builds the generator from it, as router-core takes randomness injected
 */
public record PolicyConfig(
    String name,
    double cacheThreshold,
    long balanceAbsThreshold,
    double balanceRelThreshold,
    LoadMeasure loadMeasure,
    int virtualNodes,
    double prefillWeight,
    double decodeWeight,
    long decodeTokensPerRequest,
    boolean foreignLoad,
    long seed) {

  /** The policy of {@link #defaults()}. */
  public static final String DEFAULT_NAME = "cache-aware";

  /** The seed of {@link #defaults()}. */
  public static final long DEFAULT_SEED = 42;

  /** SGLang CLI default since Aug 2025. */
  public static final double DEFAULT_CACHE_THRESHOLD = 0.3;

  /** SGLang CLI default since Aug 2025. */
  public static final long DEFAULT_BALANCE_ABS_THRESHOLD = 64;

  /** SGLang CLI default since Aug 2025. */
  public static final double DEFAULT_BALANCE_REL_THRESHOLD = 1.5;

  /** Virtual nodes per backend, as in ketama. */
  public static final int DEFAULT_VIRTUAL_NODES = 160;

  /** KV token-equivalent of one active decode, an order of magnitude of a chat context. */
  public static final long DEFAULT_DECODE_TOKENS_PER_REQUEST = 1024;

  /**
   * @throws IllegalArgumentException naming the first invalid field, its value and what was expected
   */
  public PolicyConfig {
    if (name == null || name.isBlank()) {
      throw new IllegalArgumentException(
          "name: " + (name == null ? "null" : "\"" + name + "\"") + " (expected: a non-blank string)");
    }
    if (!(cacheThreshold >= 0 && cacheThreshold <= 1)) {
      throw new IllegalArgumentException(
          "cacheThreshold: " + cacheThreshold + " (expected: 0..1)");
    }
    if (balanceAbsThreshold < 0) {
      throw new IllegalArgumentException(
          "balanceAbsThreshold: " + balanceAbsThreshold + " (expected: >= 0)");
    }
    if (!(balanceRelThreshold >= 1) || Double.isInfinite(balanceRelThreshold)) {
      throw new IllegalArgumentException(
          "balanceRelThreshold: " + balanceRelThreshold + " (expected: a finite number >= 1)");
    }
    if (loadMeasure == null) {
      throw new IllegalArgumentException("loadMeasure: null (expected: in-flight or prefilling)");
    }
    if (virtualNodes < 1 || virtualNodes > 10_000) {
      throw new IllegalArgumentException(
          "virtualNodes: " + virtualNodes + " (expected: 1..10000)");
    }
    if (!(prefillWeight >= 0) || Double.isInfinite(prefillWeight)) {
      throw new IllegalArgumentException(
          "prefillWeight: " + prefillWeight + " (expected: a finite number >= 0)");
    }
    if (!(decodeWeight >= 0) || Double.isInfinite(decodeWeight)) {
      throw new IllegalArgumentException(
          "decodeWeight: " + decodeWeight + " (expected: a finite number >= 0)");
    }
    if (decodeTokensPerRequest < 0) {
      throw new IllegalArgumentException(
          "decodeTokensPerRequest: " + decodeTokensPerRequest + " (expected: >= 0)");
    }
  }

  /**
   * {@code cache-aware} with SGLang's CLI thresholds on in-flight requests, Dynamo's unit weights, 160
   * virtual nodes, seed 42.
   */
  public static PolicyConfig defaults() {
    return new PolicyConfig(
        DEFAULT_NAME,
        DEFAULT_CACHE_THRESHOLD,
        DEFAULT_BALANCE_ABS_THRESHOLD,
        DEFAULT_BALANCE_REL_THRESHOLD,
        LoadMeasure.IN_FLIGHT_REQUESTS,
        DEFAULT_VIRTUAL_NODES,
        1.0,
        1.0,
        DEFAULT_DECODE_TOKENS_PER_REQUEST,
        false,
        DEFAULT_SEED);
  }

  /** A copy naming policy {@code name}. */
  public PolicyConfig withName(String name) {
    return new PolicyConfig(
        name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  /** A copy with {@code seed}. */
  public PolicyConfig withSeed(long seed) {
    return new PolicyConfig(
        name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  /** A copy with {@code cacheThreshold}. */
  public PolicyConfig withCacheThreshold(double cacheThreshold) {
    return new PolicyConfig(
        name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  /** A copy with both balance thresholds. */
  public PolicyConfig withBalance(long balanceAbsThreshold, double balanceRelThreshold) {
    return new PolicyConfig(
        name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  /** A copy with {@code loadMeasure}. */
  public PolicyConfig withLoadMeasure(LoadMeasure loadMeasure) {
    return new PolicyConfig(
        name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  /** A copy with {@code virtualNodes}. */
  public PolicyConfig withVirtualNodes(int virtualNodes) {
    return new PolicyConfig(
        name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  /** A copy with the {@code cost} policy's weights. */
  public PolicyConfig withCost(
      double prefillWeight, double decodeWeight, long decodeTokensPerRequest) {
    return new PolicyConfig(
        name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  /** A copy with {@code foreignLoad}. */
  public PolicyConfig withForeignLoad(boolean foreignLoad) {
    return new PolicyConfig(
        name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }
}
