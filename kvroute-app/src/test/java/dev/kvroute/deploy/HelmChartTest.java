package dev.kvroute.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import dev.kvroute.proxy.config.ConfigLoader;
import dev.kvroute.proxy.config.ProxyConfig;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.autoscaling.v2.HorizontalPodAutoscaler;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Helm chart under {@code deploy/helm/kvroute}, rendered and linted by Helm itself (helm-java
 * bundles it), for its default values and for a values file with every option on; every rendered
 * object parses as its Kubernetes type (fabric8's model), and the router configuration it renders
 * is one kvroute's own loader accepts.
 */
class HelmChartTest {
  static final Path CHART = Path.of("..", "deploy", "helm", "kvroute");
  static final Path ALL_ON = Path.of("src", "test", "resources", "helm", "values-all.yaml");
  static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  static final KubernetesSerialization K8S = new KubernetesSerialization();

  @Test
  void lintIsCleanForTheDefaultValues() {
    LintResult lint = new Helm(CHART).lint().strict().call();
    assertThat(lint.isFailed()).as("%s", lint.getMessages()).isFalse();
    assertThat(lint.getMessages()).noneMatch(m -> m.contains("[ERROR]") || m.contains("[WARNING]"));
  }

  @Test
  void lintIsCleanWithEveryOptionOn(@TempDir Path tmp) throws IOException {
    // helm lint takes the chart's own values.yaml: lint a copy whose values are the all-on file
    Path copy = tmp.resolve("kvroute");
    copyTree(CHART, copy);
    Files.copy(ALL_ON, copy.resolve("values.yaml"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    LintResult lint = new Helm(copy).lint().strict().call();
    assertThat(lint.isFailed()).as("%s", lint.getMessages()).isFalse();
    assertThat(lint.getMessages()).noneMatch(m -> m.contains("[ERROR]") || m.contains("[WARNING]"));
  }

  @Test
  void defaultValuesRenderTwoNonRootReplicasWithProbesDrainAndPodReadOnlyRbac() throws IOException {
    List<HasMetadata> objects = render(new Helm(CHART).template().withName("kv").withNamespace("llm"));
    assertThat(kinds(objects))
        .containsExactlyInAnyOrder("ConfigMap", "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount");

    Deployment d = one(objects, Deployment.class);
    assertThat(d.getMetadata().getName()).isEqualTo("kv-kvroute");
    assertThat(d.getSpec().getReplicas()).isEqualTo(2);
    var pod = d.getSpec().getTemplate().getSpec();
    assertThat(pod.getSecurityContext().getRunAsNonRoot()).isTrue();
    assertThat(pod.getSecurityContext().getRunAsUser()).isEqualTo(10001L);
    // preStop 5 s + drain 30 s + 5 s of margin
    assertThat(pod.getTerminationGracePeriodSeconds()).isEqualTo(40L);
    Container c = pod.getContainers().get(0);
    assertThat(c.getArgs()).containsExactly("serve", "--config", "/etc/kvroute/kvroute.yaml");
    assertThat(c.getLivenessProbe().getHttpGet().getPath()).isEqualTo("/health");
    assertThat(c.getReadinessProbe().getHttpGet().getPath()).isEqualTo("/ready");
    assertThat(c.getLifecycle().getPreStop().getExec().getCommand()).containsExactly("sleep", "5");
    assertThat(c.getResources().getRequests()).containsKeys("cpu", "memory");
    assertThat(c.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();
    assertThat(c.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();

    Role role = one(objects, Role.class);
    assertThat(role.getMetadata().getNamespace()).isEqualTo("llm");
    assertThat(role.getRules()).hasSize(1);
    PolicyRule rule = role.getRules().get(0);
    assertThat(rule.getResources()).containsExactly("pods");
    assertThat(rule.getVerbs()).containsExactlyInAnyOrder("get", "list", "watch");
    RoleBinding binding = one(objects, RoleBinding.class);
    assertThat(binding.getSubjects().get(0).getName()).isEqualTo(one(objects, ServiceAccount.class).getMetadata().getName());
    assertThat(binding.getRoleRef().getName()).isEqualTo(role.getMetadata().getName());

    Service svc = one(objects, Service.class);
    assertThat(svc.getSpec().getPorts().get(0).getPort()).isEqualTo(8080);
    assertThat(svc.getSpec().getSelector()).isEqualTo(d.getSpec().getSelector().getMatchLabels());

    JsonNode config = YAML.readTree(one(objects, ConfigMap.class).getData().get("kvroute.yaml"));
    assertThat(config.at("/policy/name").asText()).isEqualTo("cache-aware");
    assertThat(config.at("/timeouts/drain").asText()).isEqualTo("30s");
    assertThat(config.at("/admin/bind").asText()).isEqualTo("127.0.0.1");
    assertThat(config.at("/discovery/kubernetes/namespace").asText()).isEqualTo("llm");
    assertThat(config.at("/discovery/kubernetes/labelSelector").asText()).isEqualTo("app=vllm");
    assertThat(config.at("/discovery/kubernetes/port").asText()).isEqualTo("http");
  }

  @Test
  void everyOptionOnRendersEveryObjectAsItsType() throws IOException {
    List<HasMetadata> objects =
        render(new Helm(CHART).template().withName("kv").withNamespace("llm").withValuesFile(ALL_ON));
    assertThat(kinds(objects))
        .containsExactlyInAnyOrder(
            "ConfigMap", "Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Role", "RoleBinding",
            "Service", "ServiceAccount", "ServiceMonitor");

    Deployment d = one(objects, Deployment.class);
    assertThat(d.getSpec().getReplicas()).as("the autoscaler owns the replica count").isNull();
    var pod = d.getSpec().getTemplate().getSpec();
    assertThat(pod.getTerminationGracePeriodSeconds()).isEqualTo(75L);
    assertThat(pod.getServiceAccountName()).isEqualTo("kvroute-sa");
    assertThat(pod.getImagePullSecrets().get(0).getName()).isEqualTo("regcred");
    assertThat(pod.getTolerations()).hasSize(1);
    Container c = pod.getContainers().get(0);
    assertThat(c.getImage()).isEqualTo("registry.example/kvroute:1.2.3");
    Map<String, String> env = c.getEnv().stream()
        .filter(e -> e.getValue() != null)
        .collect(Collectors.toMap(e -> e.getName(), e -> e.getValue()));
    assertThat(env).containsEntry("JAVA_TOOL_OPTIONS", "-Xmx3g").containsEntry("KVROUTE_LOG_LEVEL", "debug");
    assertThat(c.getEnv()).anySatisfy(e -> {
      assertThat(e.getName()).isEqualTo("KVROUTE_ADMIN_TOKEN");
      assertThat(e.getValueFrom().getSecretKeyRef().getName()).isEqualTo("kvroute-admin");
    });
    assertThat(c.getPorts()).extracting(p -> p.getName()).containsExactly("http", "admin");

    assertThat(one(objects, Role.class).getMetadata().getNamespace()).isEqualTo("inference");
    assertThat(one(objects, RoleBinding.class).getSubjects().get(0).getNamespace()).isEqualTo("llm");
    assertThat(one(objects, HorizontalPodAutoscaler.class).getSpec().getMaxReplicas()).isEqualTo(12);
    assertThat(one(objects, PodDisruptionBudget.class).getSpec().getMinAvailable().getIntVal()).isEqualTo(2);
    GenericKubernetesResource monitor = one(objects, GenericKubernetesResource.class);
    assertThat(monitor.getApiVersion()).isEqualTo("monitoring.coreos.com/v1");
    assertThat(monitor.getMetadata().getLabels()).containsEntry("release", "prometheus");
    assertThat(one(objects, Service.class).getSpec().getSessionAffinity()).isEqualTo("ClientIP");

    JsonNode config = YAML.readTree(one(objects, ConfigMap.class).getData().get("kvroute.yaml"));
    assertThat(config.at("/admin/bind").asText()).as("a token makes the admin API reachable").isEqualTo("0.0.0.0");
    assertThat(config.at("/admin/port").asInt()).isEqualTo(9081);
    assertThat(config.at("/policy/balanceAbsThreshold").asInt()).isEqualTo(8);
    assertThat(config.at("/discovery/kubernetes/port").asText()).isEqualTo("8000");
  }

  @Test
  void withoutDiscoveryTheRenderedConfigurationIsOneTheRouterLoads() throws IOException {
    List<HasMetadata> objects =
        render(new Helm(CHART).template().withName("kv").withNamespace("llm")
            .set("discovery.kubernetes.enabled", false)
            .set("backends[0]", "http://10.0.0.5:8000,name=gpu-0")
            .set("router.config.policy.balanceAbsThreshold", 3));
    assertThat(kinds(objects)).doesNotContain("Role", "RoleBinding");
    String yaml = one(objects, ConfigMap.class).getData().get("kvroute.yaml");
    ProxyConfig config = ConfigLoader.parse(yaml, Map.of());
    assertThat(config.backends()).hasSize(1);
    assertThat(config.backends().get(0).name()).isEqualTo("gpu-0");
    assertThat(config.policy().name()).isEqualTo("cache-aware");
    assertThat(config.policy().balanceAbsThreshold()).isEqualTo(3);
    assertThat(config.timeouts().drain()).isEqualTo(Duration.ofSeconds(30));
    assertThat(config.admin().bind()).isEqualTo("127.0.0.1");
    assertThat(config.port()).isEqualTo(8080);
  }

  /** Helm's output, one document per object, each parsed as its Kubernetes type. */
  static List<HasMetadata> render(com.marcnuri.helm.TemplateCommand template) {
    String out = template.call();
    List<HasMetadata> objects = new ArrayList<>();
    for (String doc : out.split("(?m)^---\\s*$")) {
      if (doc.lines().allMatch(l -> l.isBlank() || l.startsWith("#"))) {
        continue;
      }
      objects.add(K8S.unmarshal(doc, HasMetadata.class));
    }
    return objects;
  }

  static List<String> kinds(List<HasMetadata> objects) {
    return objects.stream().map(HasMetadata::getKind).toList();
  }

  static <T> T one(List<HasMetadata> objects, Class<T> type) {
    List<T> found = objects.stream().filter(o -> o.getClass() == type).map(type::cast).toList();
    assertThat(found).as("objects of type %s", type.getSimpleName()).hasSize(1);
    return found.get(0);
  }

  static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> paths = Files.walk(from)) {
      for (Path p : paths.sorted(Comparator.naturalOrder()).toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
  }
}
