package dev.kvroute.bench.cli;

import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.core.policy.LoadMeasure;
import dev.kvroute.core.policy.PolicyConfig;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The routing policies' thresholds and weights as flags, defaulting to the seed scenario's
 * configuration ({@link SimPolicies#seedScenario()}). The simulator and the demo's routers use the
 * same values.
 *
 * <p>Not thread-safe (a picocli mixin).
 */
public final class PolicyOptions {
  private static final SimPolicies D = SimPolicies.seedScenario();

  @Option(names = "--cache-threshold", paramLabel = "F", description = "cache-aware: matched fraction of the prompt above which the longest match wins (default: ${DEFAULT-VALUE}).")
  double cacheThreshold = D.config().cacheThreshold();

  @Option(names = "--balance-abs", paramLabel = "N", description = "cache-aware: loads count as imbalanced only when the busiest minus the least busy exceeds this (default: ${DEFAULT-VALUE}).")
  long balanceAbsThreshold = D.config().balanceAbsThreshold();

  @Option(names = "--balance-rel", paramLabel = "X", description = "cache-aware: ...and the busiest exceeds this many times the least busy (default: ${DEFAULT-VALUE}).")
  double balanceRelThreshold = D.config().balanceRelThreshold();

  @Option(names = "--load-measure", paramLabel = "M", description = "What load rules compare: prefilling (requests not yet past their first token) or in-flight (default: ${DEFAULT-VALUE}).")
  String loadMeasure = D.config().loadMeasure().configName();

  @Option(names = "--virtual-nodes", paramLabel = "N", description = "sticky: points per backend on the hash ring (default: ${DEFAULT-VALUE}).")
  int virtualNodes = D.config().virtualNodes();

  @Option(names = "--cost-prefill-weight", paramLabel = "W", description = "cost: weight of a prefill token (default: ${DEFAULT-VALUE}).")
  double prefillWeight = D.config().prefillWeight();

  @Option(names = "--cost-decode-weight", paramLabel = "W", description = "cost: weight of a decode token-equivalent (default: ${DEFAULT-VALUE}).")
  double decodeWeight = D.config().decodeWeight();

  @Option(names = "--cost-decode-tokens", paramLabel = "TOKENS", description = "cost: KV tokens each active decode is taken to hold (default: ${DEFAULT-VALUE}).")
  long decodeTokensPerRequest = D.config().decodeTokensPerRequest();

  @Option(names = "--policy-seed", paramLabel = "N", description = "Seed of the policies' tie-breaking draws (default: ${DEFAULT-VALUE}).")
  long policySeed = D.seed();

  /** The largest page serve's {@code routing.pageSizeTokens} accepts. */
  static final int MAX_PAGE_SIZE_TOKENS = 4096;

  @Spec(Spec.Target.MIXEE)
  CommandSpec command;

  private int pageSizeTokens; // 0: the engines' block size

  @Option(names = "--page-size-tokens", paramLabel = "TOKENS", description = "Routers' prefix-index page, 1 to 4096, as serve's --page-size-tokens: a multiple of the KV block size indexes fewer, coarser pages; a precise policy (P/precise) needs it to divide the block size (default: the block size).")
  void pageSizeTokens(int tokens) {
    if (tokens < 1 || tokens > MAX_PAGE_SIZE_TOKENS) {
      throw new ParameterException(command.commandLine(), "--page-size-tokens: " + tokens
          + " (expected: 1.." + MAX_PAGE_SIZE_TOKENS + ", as serve's routing.pageSizeTokens)");
    }
    pageSizeTokens = tokens;
  }

  /** The policies these flags configure. */
  public SimPolicies policies() {
    PolicyConfig c =
        new PolicyConfig(
            D.config().name(), cacheThreshold, balanceAbsThreshold, balanceRelThreshold,
            LoadMeasure.fromName(loadMeasure), virtualNodes, prefillWeight, decodeWeight, decodeTokensPerRequest,
            false, policySeed);
    return new SimPolicies(c, policySeed, D.indexReplies()).withPageSizeTokens(pageSizeTokens);
  }
}
