package dev.kvroute.epp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.proxy.EndpointPicker;
import dev.kvroute.proxy.config.DiscoveryConfig;
import dev.kvroute.proxy.config.KubernetesDiscoveryConfig;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMixedDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Endpoints from an InferencePool: its selector and target port, read from fabric8's CRUD mock API
 * server, become kvroute's pod discovery; only the selected, ready pods are picked.
 */
final class InferencePoolIT {
  static final String NS = "llm";

  @TempDir Path dir;
  private KubernetesMockServer server;
  private KubernetesClient client;

  @BeforeEach
  void startApiServer() {
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new KubernetesMixedDispatcher(new HashMap<>()), false);
    server.start();
    client = server.createClient();
  }

  @AfterEach
  void stop() {
    client.close();
    server.shutdown();
  }

  static GenericKubernetesResource pool(String name, int port) {
    return new GenericKubernetesResourceBuilder()
        .withApiVersion(InferencePools.API_VERSION).withKind(InferencePools.KIND)
        .withNewMetadata().withName(name).withNamespace(NS).endMetadata()
        .withAdditionalProperties(Map.of("spec", Map.of(
            "selector", Map.of("matchLabels", Map.of("app", "vllm", "tier", "gpu")),
            "targetPorts", List.of(Map.of("number", port)),
            "endpointPickerRef", Map.of("name", "kvroute-epp", "port", Map.of("number", 9002)))))
        .build();
  }

  static Pod pod(String name, String app, String ip, boolean ready) {
    return new PodBuilder()
        .withNewMetadata().withName(name).withNamespace(NS).addToLabels("app", app).addToLabels("tier", "gpu").endMetadata()
        .withNewSpec().addNewContainer().withName("engine").withImage("vllm/vllm-openai").endContainer().endSpec()
        .withNewStatus().withPodIP(ip).withPhase("Running")
            .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition().endStatus()
        .build();
  }

  private Path kubeconfig() throws Exception {
    Path f = dir.resolve("kubeconfig");
    Files.writeString(f, """
        apiVersion: v1
        kind: Config
        clusters:
          - name: mock
            cluster:
              server: http://localhost:%d
        contexts:
          - name: mock
            context:
              cluster: mock
              user: mock
              namespace: %s
        current-context: mock
        users:
          - name: mock
            user:
              token: test-token
        """.formatted(server.getPort(), NS));
    return f;
  }

  @Test
  void poolSelectorAndTargetPortBecomeTheEndpoints() throws Exception {
    try (MockEngineFleet engines = MockEngineFleet.start(EndpointPickerIT.options(), 1)) {
      int port = URI.create(engines.urls().get(0)).getPort();
      client.genericKubernetesResources(InferencePools.RESOURCE).inNamespace(NS).resource(pool("vllm-pool", port)).create();
      client.pods().inNamespace(NS).resource(pod("vllm-0", "vllm", "127.0.0.1", true)).create();
      client.pods().inNamespace(NS).resource(pod("other-0", "other", "127.0.0.2", true)).create();

      KubernetesDiscoveryConfig k8s = InferencePools.discovery("", "vllm-pool", kubeconfig().toString(),
          Duration.ofMinutes(5), Duration.ofSeconds(10));
      assertThat(k8s.namespace()).isEqualTo(NS);
      assertThat(k8s.labelSelector()).isEqualTo("app=vllm,tier=gpu");
      assertThat(k8s.port()).isEqualTo(Integer.toString(port));

      try (EndpointPicker picker = EndpointPicker.start(
          EndpointPickerIT.config(List.of()).withDiscovery(new DiscoveryConfig(k8s)), 2)) {
        await().atMost(Duration.ofSeconds(20)).until(() -> picker.routableEndpoints().equals(List.of("127.0.0.1:" + port)));
        EndpointPicker.Pick p = picker.pick("/v1/completions",
            ("{\"model\":\"" + EndpointPickerIT.MODEL + "\",\"prompt\":\"pool\",\"max_tokens\":1}").getBytes(), h -> null, null);
        assertThat(p.endpoints()).containsExactly("127.0.0.1:" + port);
        p.cancel();
        // a new ready pod of the pool joins
        client.pods().inNamespace(NS).resource(pod("vllm-1", "vllm", "127.0.0.1", false)).create();
        assertThat(picker.routableEndpoints()).containsExactly("127.0.0.1:" + port);
      }
    }
  }

  @Test
  void missingPoolIsAOneLineError() throws Exception {
    String kc = kubeconfig().toString();
    assertThatThrownBy(() -> InferencePools.discovery(NS, "no-such-pool", kc, Duration.ofMinutes(5), Duration.ofSeconds(5)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("InferencePool llm/no-such-pool not found");
  }

  @Test
  void poolWithoutTargetPortsIsRefused() throws Exception {
    GenericKubernetesResource bad = new GenericKubernetesResourceBuilder()
        .withApiVersion(InferencePools.API_VERSION).withKind(InferencePools.KIND)
        .withNewMetadata().withName("bad").withNamespace(NS).endMetadata()
        .withAdditionalProperties(Map.of("spec", Map.of("selector", Map.of("matchLabels", Map.of("app", "vllm")))))
        .build();
    client.genericKubernetesResources(InferencePools.RESOURCE).inNamespace(NS).resource(bad).create();
    String kc = kubeconfig().toString();
    assertThatThrownBy(() -> InferencePools.discovery(NS, "bad", kc, Duration.ofMinutes(5), Duration.ofSeconds(5)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("spec.targetPorts is empty");
  }
}
