package dev.kvroute.proxy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class KubernetesDiscoveryConfigTest {

  @Test
  void absentSectionIsNoDiscoveryAndThePrintedDefaultsSayNothingOfIt() {
    ProxyConfig c = ConfigLoader.parse("", Map.of());
    assertThat(c.discovery().enabled()).isFalse();
    assertThat(ConfigLoader.toYaml(c)).doesNotContain("kubernetes");
  }

  @Test
  void aPartialSectionBindsWithDefaultsAndRoundTrips() {
    ProxyConfig c = ConfigLoader.parse("discovery:\n  kubernetes:\n    labelSelector: app=vllm\n    port: 8000\n", Map.of());
    KubernetesDiscoveryConfig k = c.discovery().kubernetes();
    assertThat(k).isEqualTo(new KubernetesDiscoveryConfig("", "app=vllm", "8000", null,
        Duration.ofMinutes(5), Duration.ofSeconds(10)));
    assertThat(k.portNumber()).isEqualTo(8000);
    assertThat(ConfigLoader.parse(ConfigLoader.toYaml(c), Map.of())).isEqualTo(c);
  }

  @Test
  void flagOverridesCreateTheSection() {
    ProxyConfig c = ConfigLoader.parse("", Map.of("discovery.kubernetes.labelSelector", "app=sglang",
        "discovery.kubernetes.port", "http", "discovery.kubernetes.namespace", "llm"));
    assertThat(c.discovery().kubernetes().namespace()).isEqualTo("llm");
    assertThat(c.discovery().kubernetes().portNumber()).isEqualTo(-1);
  }

  @Test
  void badValuesNameTheKeyAndWhatWasExpected() {
    assertThatThrownBy(() -> ConfigLoader.parse("discovery:\n  kubernetes:\n    port: http\n", Map.of()))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("discovery.kubernetes.labelSelector: none (expected: a label selector such as app=vllm");
    assertThatThrownBy(() -> ConfigLoader.parse("discovery:\n  kubernetes:\n    labelSelector: a=b\n    port: 70000\n", Map.of()))
        .hasMessageContaining("discovery.kubernetes.port: 70000 (expected: a port number in 1..65535 or a port name)");
    assertThatThrownBy(() -> ConfigLoader.parse("discovery:\n  kubernetes:\n    labelSelector: a=b\n    port: Http_Port\n", Map.of()))
        .hasMessageContaining("discovery.kubernetes.port: Http_Port (expected: a container port name");
    assertThatThrownBy(() -> ConfigLoader.parse("discovery:\n  kubernetes:\n    labelSelector: a=b\n    port: http\n    namespace: LLM\n", Map.of()))
        .hasMessageContaining("discovery.kubernetes.namespace: LLM (expected: a Kubernetes namespace name");
    assertThatThrownBy(() -> ConfigLoader.parse("discovery:\n  kubernetes:\n    labelSelector: a=b\n    port: http\n    startTimeout: 0s\n", Map.of()))
        .hasMessageContaining("discovery.kubernetes.startTimeout: 0s (expected: > 0)");
    assertThatThrownBy(() -> ConfigLoader.parse("discovery:\n  consul: {}\n", Map.of()))
        .hasMessageContaining("discovery.consul: unknown key (expected one of: kubernetes)");
  }
}
