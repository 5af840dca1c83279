package dev.kvroute.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.marcnuri.helm.Helm;
import dev.kvroute.core.BackendId;
import dev.kvroute.proxy.KvrouteServer;
import dev.kvroute.proxy.config.ConfigLoader;
import dev.kvroute.proxy.config.ProxyConfig;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Discovery runs with exactly what the chart's Role grants: the router is started with the
 * configuration the chart renders, against fabric8's mock API server, and every request it makes is
 * mapped to a Kubernetes (resource, verb) pair; each must be granted by the rendered Role, in the
 * Role's namespace, and the Role grants nothing on a resource discovery does not read.
 */
class DiscoveryRbacTest {
  private static final Pattern POD_PATH = Pattern.compile("^/api/v1/namespaces/([^/]+)/pods(/[^/?]+)?(\\?.*)?$");

  @Test
  void discoveryNeedsOnlyWhatTheRenderedRoleGrants(@TempDir Path dir) throws Exception {
    List<HasMetadata> objects = HelmChartTest.render(new Helm(HelmChartTest.CHART).template().withName("kv")
        .withNamespace("llm").set("discovery.kubernetes.port", "8000"));
    Role role = HelmChartTest.one(objects, Role.class);
    ProxyConfig rendered = ConfigLoader.parse(HelmChartTest.one(objects, ConfigMap.class).getData().get("kvroute.yaml"), Map.of());

    KubernetesMockServer server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new KubernetesCrudDispatcher(), false);
    server.start();
    try (KubernetesClient client = server.createClient()) {
      client.pods().inNamespace("llm").resource(new PodBuilder()
          .withNewMetadata().withName("vllm-0").withNamespace("llm").addToLabels("app", "vllm").endMetadata()
          .withNewSpec().addNewContainer().withName("engine").withImage("vllm").endContainer().endSpec()
          .withNewStatus().withPodIP("127.0.0.1")
              .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus()
          .build()).create();
      int before = server.getRequestCount();
      for (int i = 0; i < before; i++) {
        server.takeRequest(1, TimeUnit.SECONDS);
      }
      Path kubeconfig = dir.resolve("kubeconfig");
      Files.writeString(kubeconfig, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://localhost:"
          + server.getPort() + "\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
          + "users:\n- name: u\n  user:\n    token: t\n");
      ProxyConfig cfg = rendered.withPort(0).withAdminPort(-1).withDiscovery(new dev.kvroute.proxy.config.DiscoveryConfig(
          rendered.discovery().kubernetes().withKubeconfig(kubeconfig.toString())));
      try (KvrouteServer router = KvrouteServer.start(cfg)) {
        assertThat(router.backends()).containsExactly(BackendId.of("vllm-0"));
        // the informer's watch is open once it has asked for it
        await().atMost(10, TimeUnit.SECONDS).until(() -> server.getRequestCount() >= 3);
      }
      Set<String> used = new TreeSet<>();
      RecordedRequest r;
      while ((r = server.takeRequest(100, TimeUnit.MILLISECONDS)) != null) {
        Matcher m = POD_PATH.matcher(r.getPath());
        assertThat(m.matches()).as("a pod path: %s %s", r.getMethod(), r.getPath()).isTrue();
        assertThat(m.group(1)).as("in the Role's namespace").isEqualTo(role.getMetadata().getNamespace());
        used.add("pods:" + verb(r.getMethod(), m.group(2) != null, m.group(3)));
      }
      assertThat(used).containsExactly("pods:list", "pods:watch");

      Set<String> granted = new TreeSet<>();
      for (PolicyRule rule : role.getRules()) {
        assertThat(rule.getApiGroups()).containsExactly("");
        for (String res : rule.getResources()) {
          for (String verb : rule.getVerbs()) {
            granted.add(res + ":" + verb);
          }
        }
      }
      assertThat(granted).as("the Role covers what discovery calls").containsAll(used);
      assertThat(granted).as("and only read verbs on the resource it reads (get for kubectl-style checks)")
          .containsExactlyInAnyOrder("pods:get", "pods:list", "pods:watch");
    } finally {
      server.shutdown();
    }
  }

  /** The Kubernetes verb of a request: get/list/watch for reads, the write verbs otherwise. */
  private static String verb(String method, boolean named, String query) {
    boolean watch = query != null && query.contains("watch=true");
    return switch (method) {
      case "GET" -> watch ? "watch" : named ? "get" : "list";
      case "POST" -> "create";
      case "PUT" -> "update";
      case "PATCH" -> "patch";
      case "DELETE" -> named ? "delete" : "deletecollection";
      default -> method;
    };
  }
}
