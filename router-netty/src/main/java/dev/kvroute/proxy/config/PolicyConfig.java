package dev.kvroute.proxy.config;

import dev.kvroute.core.policy.LoadMeasure;

/**
 * The routing policy and its thresholds: the YAML/flag face of router-core's
 * {@code dev.kvroute.core.policy.PolicyConfig} plus the policy name and seed.
 *
 * <p>Immutable and thread-safe.
 *
 * @param name one of {@code round-robin}, {@code random}, {@code least-loaded}, {@code power-of-two},
 *     {@code sticky}, {@code cache-aware} (default), {@code cost}
 * @param cacheThreshold cache-aware: the best match counts as a hit only when its matched tokens
 *     exceed this fraction of the prompt (SGLang's {@code --cache-threshold}; default 0.3)
 * @param balanceAbsThreshold cache-aware: loads count as imbalanced only when the busiest backend's
 *     load exceeds the idlest's by more than this (SGLang's {@code --balance-abs-threshold}; default 64)
 * @param balanceRelThreshold cache-aware: ...and is more than this multiple of it (SGLang's
 *     {@code --balance-rel-threshold}; default 1.5)
 * @param loadMeasure what load-based rules compare: {@code in-flight} requests (default, as SGLang)
 *     or {@code prefilling} requests (not yet past their first token)
 * @param virtualNodes sticky: points per backend on the consistent-hash ring (default 160)
 * @param prefillWeight cost: weight of a prefill token (default 1.0)
 * @param decodeWeight cost: weight of a decode token-equivalent (default 1.0)
 * @param decodeTokensPerRequest cost: KV tokens each active decode is taken to hold (default 1024)
 * @param foreignLoad whether load-based rules count the load engines report beyond this router's
 *     own (other routers, direct clients; scraped every {@code healthCheck.engineLoadInterval});
 *     default off (docs/operations.md has the measurements)
 * @param seed seed of the policy's random generator (ties, {@code random}, {@code power-of-two})
 */
public record PolicyConfig(
    String name,
    double cacheThreshold,
    long balanceAbsThreshold,
    double balanceRelThreshold,
    String loadMeasure,
    int virtualNodes,
    double prefillWeight,
    double decodeWeight,
    long decodeTokensPerRequest,
    boolean foreignLoad,
    long seed) {

  public PolicyConfig {
    Checks.nonBlank("name", name);
    Checks.nonBlank("loadMeasure", loadMeasure);
    // router-core validates every threshold with the same message format
    coreConfig(cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure, virtualNodes,
        prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad);
  }

  /** router-core's defaults for every threshold, {@code cache-aware}, seed 42. */
  public static PolicyConfig defaults() {
    dev.kvroute.core.policy.PolicyConfig d = dev.kvroute.core.policy.PolicyConfig.defaults();
    return new PolicyConfig("cache-aware", d.cacheThreshold(), d.balanceAbsThreshold(),
        d.balanceRelThreshold(), d.loadMeasure().configName(), d.virtualNodes(), d.prefillWeight(),
        d.decodeWeight(), d.decodeTokensPerRequest(), d.foreignLoad(), 42);
  }

  /** Policy {@code name} with router-core's thresholds {@code core} and {@code seed}. */
  public static PolicyConfig of(String name, dev.kvroute.core.policy.PolicyConfig core, long seed) {
    return new PolicyConfig(name, core.cacheThreshold(), core.balanceAbsThreshold(), core.balanceRelThreshold(),
        core.loadMeasure().configName(), core.virtualNodes(), core.prefillWeight(), core.decodeWeight(),
        core.decodeTokensPerRequest(), core.foreignLoad(), seed);
  }

  /** These thresholds as router-core's policy configuration. */
  public dev.kvroute.core.policy.PolicyConfig toCore() {
    return coreConfig(cacheThreshold, balanceAbsThreshold, balanceRelThreshold, loadMeasure,
        virtualNodes, prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad);
  }

  /** A copy naming another policy. */
  public PolicyConfig withName(String name) {
    return new PolicyConfig(name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold,
        loadMeasure, virtualNodes, prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  /** A copy that counts (or not) engine-reported foreign load. */
  public PolicyConfig withForeignLoad(boolean foreignLoad) {
    return new PolicyConfig(name, cacheThreshold, balanceAbsThreshold, balanceRelThreshold,
        loadMeasure, virtualNodes, prefillWeight, decodeWeight, decodeTokensPerRequest, foreignLoad, seed);
  }

  private static dev.kvroute.core.policy.PolicyConfig coreConfig(
      double cacheThreshold,
      long balanceAbsThreshold,
      double balanceRelThreshold,
      String loadMeasure,
      int virtualNodes,
      double prefillWeight,
      double decodeWeight,
      long decodeTokensPerRequest,
      boolean foreignLoad) {
    return new dev.kvroute.core.policy.PolicyConfig(cacheThreshold, balanceAbsThreshold,
        balanceRelThreshold, LoadMeasure.fromName(loadMeasure), virtualNodes, prefillWeight,
        decodeWeight, decodeTokensPerRequest, foreignLoad);
  }
}
