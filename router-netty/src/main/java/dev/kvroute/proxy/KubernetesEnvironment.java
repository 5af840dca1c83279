package dev.kvroute.proxy;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * Whether this process has any Kubernetes configuration for fabric8's auto-configuration to find,
 * checked before a client is built: without one, fabric8 falls back to {@code
 * https://kubernetes.default.svc} and retries a host that does not resolve for tens of seconds before
 * failing with a message that names neither the cause nor the fix.
 *
 * <p>Found when any of these holds (fabric8's {@code Config.autoConfigure} order): the {@code
 * kubernetes.master} system property or the {@code KUBERNETES_MASTER} variable is set; a file named by
 * {@code KUBECONFIG} (a {@code :}-separated list; fabric8 reads the first) or {@code ~/.kube/config}
 * exists; or the process runs in a pod ({@code KUBERNETES_SERVICE_HOST} is set, or the service
 * account token {@value #TOKEN} exists).
 *
 * <p>Stateless and thread-safe.
 */
public final class KubernetesEnvironment {
  /** Where a pod's service account token is mounted. */
  public static final String TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

  private KubernetesEnvironment() {}

  /**
   * Why no Kubernetes configuration can be found here, or {@code null} when one can.
   *
   * @param kubeconfig the kubeconfig the command was given, or {@code null} (checked by its reader)
   */
  public static String missing(String kubeconfig) {
    return missing(kubeconfig, System.getenv(), System.getProperty("kubernetes.master"),
        Path.of(System.getProperty("user.home"), ".kube", "config"), Path.of(TOKEN));
  }

  /** As {@link #missing(String)}, with the environment, property and paths given. */
  static String missing(String kubeconfig, Map<String, String> env, String masterProperty, Path homeConfig,
      Path token) {
    if (kubeconfig != null || masterProperty != null || env.get("KUBERNETES_MASTER") != null
        || env.get("KUBERNETES_SERVICE_HOST") != null || Files.exists(token) || Files.exists(homeConfig)) {
      return null;
    }
    String list = env.get("KUBECONFIG");
    if (list != null && !list.isBlank()) {
      String first = list.split(File.pathSeparator, -1)[0];
      if (!first.isEmpty() && Files.exists(Path.of(first))) {
        return null;
      }
      return "KUBECONFIG names " + first + ", which does not exist";
    }
    return "no Kubernetes configuration found: not in a pod (KUBERNETES_SERVICE_HOST unset, no service account"
        + " token at " + token + "), no KUBECONFIG, no " + homeConfig;
  }
}
