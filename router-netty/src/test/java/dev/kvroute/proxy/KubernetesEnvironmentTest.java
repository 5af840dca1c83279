package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Whether fabric8 would find a Kubernetes configuration, decided without building a client. */
final class KubernetesEnvironmentTest {
  @TempDir
  Path dir;

  @Test
  void nothingConfiguredIsReportedWithEveryPlaceLookedAt() {
    String why = KubernetesEnvironment.missing(null, Map.of(), null, dir.resolve("home-config"), dir.resolve("token"));
    assertThat(why).startsWith("no Kubernetes configuration found").contains("KUBERNETES_SERVICE_HOST")
        .contains(dir.resolve("token").toString()).contains("KUBECONFIG").contains(dir.resolve("home-config").toString());
  }

  @Test
  void anyOfFabric8sSourcesCounts() throws Exception {
    Path home = dir.resolve("home-config");
    Path token = dir.resolve("token");
    assertThat(KubernetesEnvironment.missing("/given", Map.of(), null, home, token)).isNull();
    assertThat(KubernetesEnvironment.missing(null, Map.of("KUBERNETES_SERVICE_HOST", "10.0.0.1"), null, home, token)).isNull();
    assertThat(KubernetesEnvironment.missing(null, Map.of("KUBERNETES_MASTER", "https://k"), null, home, token)).isNull();
    assertThat(KubernetesEnvironment.missing(null, Map.of(), "https://k", home, token)).isNull();
    Files.writeString(token, "t");
    assertThat(KubernetesEnvironment.missing(null, Map.of(), null, home, token)).isNull();
    Files.delete(token);
    Files.writeString(home, "apiVersion: v1");
    assertThat(KubernetesEnvironment.missing(null, Map.of(), null, home, token)).isNull();
  }

  @Test
  void aKubeconfigVariableNamingNoFileIsSaid() throws Exception {
    Path home = dir.resolve("home-config");
    Path token = dir.resolve("token");
    assertThat(KubernetesEnvironment.missing(null, Map.of("KUBECONFIG", "/nope/config"), null, home, token))
        .isEqualTo("KUBECONFIG names /nope/config, which does not exist");
    Path real = Files.writeString(dir.resolve("kc"), "apiVersion: v1");
    assertThat(KubernetesEnvironment.missing(null, Map.of("KUBECONFIG", real + ":/other"), null, home, token)).isNull();
  }
}
