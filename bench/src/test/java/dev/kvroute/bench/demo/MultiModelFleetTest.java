package dev.kvroute.bench.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

final class MultiModelFleetTest {
  private static final List<BackendConfig> BACKENDS =
      List.of(new BackendConfig(URI.create("http://127.0.0.1:18100"), "engine-0", 1_048_576L));

  /**
   * The demo's router ran its core with the simulator's policy configuration (balance abs 3) but kept
   * the proxy's default one (abs 64) in its own configuration, which is where LoRA affinity reads its
   * allowance: the real router kept an adapter on the replicas running it until they were 64 requests
   * busier than another, the simulator only 3, so the real affine run piled the popular adapter on one
   * replica (busiest/mean 1.80x against 1.23x simulated, adapter requests' TTFT 4.5 s against 2.5 s).
   */
  @Test
  void theRealRoutersLoraAllowanceIsTheSimulatedPolicysBalanceThreshold() {
    SimPolicies policies = SimPolicies.seedScenario();
    assertThat(policies.config().balanceAbsThreshold())
        .isNotEqualTo(PolicyConfig.DEFAULT_BALANCE_ABS_THRESHOLD);
    ProxyConfig c = MultiModelFleet.routerConfig("cache-aware", BACKENDS, true, Duration.ofMillis(500), policies);
    assertThat(c.policy()).isEqualTo(policies.config().withName("cache-aware"));
    assertThat(c.policy().balanceAbsThreshold()).isEqualTo(3);
    assertThat(c.models().loraAffinity()).isTrue();
    assertThat(c.healthCheck().engineLoadInterval()).isEqualTo(Duration.ofMillis(500));
  }

  @Test
  void aPreciseNameKeepsItsPolicyNameAndPreciseMode() {
    ProxyConfig c =
        MultiModelFleet.routerConfig("cache-aware/precise", BACKENDS, false, Duration.ofMillis(200),
            SimPolicies.seedScenario());
    assertThat(c.policy().name()).isEqualTo("cache-aware");
    assertThat(c.index().mode()).isEqualTo("precise");
    assertThat(c.models().loraAffinity()).isFalse();
  }
}
