package dev.kvroute.bench.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

final class BundledFleetTest {

  @Test
  void theRouterListensOnLoopbackOnlyWithoutTheAdminApi() {
    List<BackendConfig> backends =
        List.of(new BackendConfig(URI.create("http://127.0.0.1:18100"), "engine-0", 1_048_576L));
    ProxyConfig c = BundledFleet.routerConfig("cache-aware", backends);
    assertThat(c.bind()).isEqualTo("127.0.0.1");
    assertThat(c.port()).isZero();
    assertThat(c.admin().port()).isEqualTo(-1);
    assertThat(c.policy().name()).isEqualTo("cache-aware");
    assertThat(c.backends()).isEqualTo(backends);
  }

  @Test
  void aPreciseNameRunsItsPolicyInPreciseIndexMode() {
    List<BackendConfig> backends =
        List.of(new BackendConfig(URI.create("http://127.0.0.1:18100"), "engine-0", 1_048_576L));
    ProxyConfig precise = BundledFleet.routerConfig("cache-aware/precise", backends);
    assertThat(precise.policy().name()).isEqualTo("cache-aware");
    assertThat(precise.index().mode()).isEqualTo("precise");
    assertThat(BundledFleet.routerConfig("cache-aware", backends).index().mode()).isEqualTo("approximate");
  }
}
