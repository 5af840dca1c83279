package dev.kvroute.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.epp.Gaie;
import dev.kvroute.epp.InferencePools;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceAccount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.gatewayapi.v1.HTTPBackendRef;
import io.fabric8.kubernetes.api.model.gatewayapi.v1.HTTPRoute;
import io.fabric8.kubernetes.api.model.rbac.PolicyRule;
import io.fabric8.kubernetes.api.model.rbac.Role;
import io.fabric8.kubernetes.api.model.rbac.RoleBinding;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The example manifests under {@code deploy/inference-extension} (kvroute as an InferencePool's
 * endpoint picker): every object parses as its Kubernetes type, the Deployment's arguments are a valid
 * {@code kvroute epp} command line, and the objects refer to each other consistently (the pool names
 * the picker's Service and port, the route names the pool, the Role grants what the picker reads).
 */
final class InferenceExtensionManifestsTest {
  static final Path DIR = Path.of("..", "deploy", "inference-extension");
  static final KubernetesSerialization K8S = new KubernetesSerialization();

  static List<HasMetadata> load(String file) throws Exception {
    List<HasMetadata> out = new ArrayList<>();
    for (String doc : Files.readString(DIR.resolve(file)).split("(?m)^---\\s*$")) {
      if (!doc.lines().allMatch(l -> l.isBlank() || l.startsWith("#"))) {
        out.add(K8S.unmarshal(doc, HasMetadata.class));
      }
    }
    return out;
  }

  static <T> T only(List<HasMetadata> objects, Class<T> type) {
    List<T> of = objects.stream().filter(type::isInstance).map(type::cast).toList();
    assertThat(of).as(type.getSimpleName()).hasSize(1);
    return of.get(0);
  }

  @Test
  void pickerDeploymentRunsAValidEppCommandAndProbesItsHealthServices() throws Exception {
    List<HasMetadata> epp = load("kvroute-epp.yaml");
    only(epp, ServiceAccount.class);
    only(epp, RoleBinding.class);
    Deployment d = only(epp, Deployment.class);
    Container c = d.getSpec().getTemplate().getSpec().getContainers().get(0);
    assertThat(c.getArgs().get(0)).isEqualTo("epp");
    EppCommand cmd = new EppCommand();
    new CommandLine(cmd).parseArgs(c.getArgs().subList(1, c.getArgs().size()).toArray(String[]::new));
    assertThat(cmd.poolName).isEqualTo("vllm-pool");
    assertThat(cmd.grpcPort).isEqualTo(9002);
    assertThat(c.getLivenessProbe().getGrpc().getService()).isEqualTo(Gaie.LIVENESS);
    assertThat(c.getReadinessProbe().getGrpc().getService()).isEqualTo(Gaie.READINESS);
    assertThat(c.getReadinessProbe().getGrpc().getPort()).isEqualTo(cmd.grpcPort);
    assertThat(c.getPorts()).anyMatch(p -> p.getName().equals("grpc") && p.getContainerPort() == cmd.grpcPort);
    assertThat(d.getSpec().getTemplate().getSpec().getServiceAccountName()).isEqualTo("kvroute-epp");

    Service svc = only(epp, Service.class);
    assertThat(svc.getSpec().getSelector()).isEqualTo(d.getSpec().getSelector().getMatchLabels());
    assertThat(svc.getSpec().getPorts()).anyMatch(p -> p.getPort() == 9002 && "grpc".equals(p.getTargetPort().getStrVal()));

    Role role = only(epp, Role.class);
    assertThat(grants(role, "inference.networking.k8s.io", "inferencepools")).containsExactly("get");
    assertThat(grants(role, "", "pods")).containsExactlyInAnyOrder("get", "list", "watch");
  }

  static List<String> grants(Role role, String group, String resource) {
    List<String> verbs = new ArrayList<>();
    for (PolicyRule r : role.getRules()) {
      if (r.getApiGroups().contains(group) && r.getResources().contains(resource)) {
        verbs.addAll(r.getVerbs());
      }
    }
    return verbs;
  }

  @Test
  @SuppressWarnings("unchecked")
  void poolNamesThePickerAndTheRouteNamesThePool() throws Exception {
    GenericKubernetesResource pool = (GenericKubernetesResource) load("inferencepool.yaml").get(0);
    assertThat(pool.getApiVersion()).isEqualTo(InferencePools.API_VERSION);
    assertThat(pool.getKind()).isEqualTo(InferencePools.KIND);
    assertThat(InferencePools.selector(pool)).isEqualTo("app=vllm");
    assertThat(InferencePools.port(pool)).isEqualTo("8000");
    Map<String, Object> ref = pool.get("spec", "endpointPickerRef");
    assertThat(ref.get("name")).isEqualTo("kvroute-epp");
    assertThat(((Map<String, Object>) ref.get("port")).get("number")).isEqualTo(9002);

    HTTPRoute route = (HTTPRoute) load("httproute.yaml").get(0);
    HTTPBackendRef backend = route.getSpec().getRules().get(0).getBackendRefs().get(0);
    assertThat(backend.getKind()).isEqualTo("InferencePool");
    assertThat(backend.getGroup()).isEqualTo("inference.networking.k8s.io");
    assertThat(backend.getName()).isEqualTo(pool.getMetadata().getName());
    assertThat(route.getMetadata().getNamespace()).isEqualTo(pool.getMetadata().getNamespace());
  }
}
