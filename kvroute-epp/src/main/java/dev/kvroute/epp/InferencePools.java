package dev.kvroute.epp;

import dev.kvroute.proxy.config.KubernetesDiscoveryConfig;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads a Gateway API Inference Extension {@code InferencePool} ({@code inference.networking.k8s.io/v1},
 * GAIE {@code api/v1/inferencepool_types.go}) and turns it into kvroute's pod discovery: the pool's
 * {@code spec.selector.matchLabels} become the label selector, its first {@code spec.targetPorts[].number}
 * the engine port, its namespace the pods' namespace.
 *
 * <p>The pool is read once, at start; a changed selector or port applies when the picker restarts
 * (GAIE's EPP watches it; see docs/kubernetes.md).
 *
 * <p>Stateless and thread-safe.
 */
public final class InferencePools {
  /** The InferencePool's API version. */
  public static final String API_VERSION = "inference.networking.k8s.io/v1";
  /** The InferencePool's kind. */
  public static final String KIND = "InferencePool";
  /** The resource, named without API discovery (the picker's Role needs only get on inferencepools). */
  static final ResourceDefinitionContext RESOURCE = new ResourceDefinitionContext.Builder()
      .withGroup("inference.networking.k8s.io").withVersion("v1").withKind(KIND).withPlural("inferencepools")
      .withNamespaced(true).build();

  private InferencePools() {}

  /**
   * The discovery that {@code name}'s selector and target port describe.
   *
   * @param namespace the pool's namespace; empty means the client's (the service account's in a pod)
   * @param kubeconfig a kubeconfig path, or {@code null} for fabric8's auto-configuration
   * @param base the other discovery settings (resync period, start timeout) to keep
   * @throws IllegalStateException if no Kubernetes configuration is found ({@link
   *     dev.kvroute.proxy.KubernetesEnvironment}, at once), or the pool cannot be read within {@code
   *     startTimeout}, does not exist, or has no selector or port (one line saying which)
   */
  public static KubernetesDiscoveryConfig discovery(String namespace, String name, String kubeconfig,
      Duration resyncPeriod, Duration startTimeout) {
    String missing = dev.kvroute.proxy.KubernetesEnvironment.missing(kubeconfig);
    if (missing != null) {
      throw new IllegalStateException("cannot read InferencePool " + name + ": " + missing + " (expected: run the"
          + " picker in the cluster with a service account, or give --kubeconfig; outside Kubernetes, list the"
          + " engines with --backend instead of --pool-name)");
    }
    Config config;
    try {
      config = kubeconfig == null ? Config.autoConfigure(null)
          : Config.fromKubeconfig(null, Files.readString(Path.of(kubeconfig)), kubeconfig);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("cannot read kubeconfig " + kubeconfig + ": " + e.getMessage(), e);
    }
    config.setRequestTimeout((int) Math.min(Integer.MAX_VALUE, startTimeout.toMillis()));
    config.setConnectionTimeout((int) Math.min(Integer.MAX_VALUE, startTimeout.toMillis()));
    config.setRequestRetryBackoffLimit(0); // one read, bounded by startTimeout: an unreachable server fails now
    try (KubernetesClient client = new KubernetesClientBuilder().withConfig(config).build()) {
      return discovery(client, namespace, name, kubeconfig, resyncPeriod, startTimeout);
    }
  }

  /** As above, through {@code client}. */
  static KubernetesDiscoveryConfig discovery(KubernetesClient client, String namespace, String name,
      String kubeconfig, Duration resyncPeriod, Duration startTimeout) {
    String ns = namespace == null || namespace.isEmpty() ? client.getNamespace() : namespace;
    if (ns == null) {
      ns = "default";
    }
    GenericKubernetesResource pool;
    try {
      pool = client.genericKubernetesResources(RESOURCE).inNamespace(ns).withName(name).get();
    } catch (KubernetesClientException e) {
      throw new IllegalStateException("cannot read InferencePool " + ns + "/" + name + ": " + e.getMessage(), e);
    }
    if (pool == null) {
      throw new IllegalStateException("InferencePool " + ns + "/" + name + " not found (expected: an "
          + API_VERSION + " " + KIND + " with spec.selector.matchLabels and spec.targetPorts)");
    }
    return new KubernetesDiscoveryConfig(ns, selector(pool), port(pool), kubeconfig, resyncPeriod, startTimeout);
  }

  /** {@code spec.selector.matchLabels} as a label selector ({@code k1=v1,k2=v2}, keys sorted). */
  public static String selector(GenericKubernetesResource pool) {
    Map<String, Object> labels = pool.get("spec", "selector", "matchLabels");
    if (labels == null || labels.isEmpty()) {
      throw new IllegalStateException("InferencePool " + pool.getMetadata().getName()
          + ": spec.selector.matchLabels is empty (expected: the model server pods' labels)");
    }
    StringBuilder s = new StringBuilder();
    for (Map.Entry<String, Object> e : new TreeMap<>(labels).entrySet()) {
      if (s.length() > 0) {
        s.append(',');
      }
      s.append(e.getKey()).append('=').append(e.getValue());
    }
    return s.toString();
  }

  /** The first of {@code spec.targetPorts[].number}. */
  public static String port(GenericKubernetesResource pool) {
    List<Map<String, Object>> ports = pool.get("spec", "targetPorts");
    if (ports == null || ports.isEmpty() || !(ports.get(0).get("number") instanceof Number n)) {
      throw new IllegalStateException("InferencePool " + pool.getMetadata().getName()
          + ": spec.targetPorts is empty (expected: [{number: PORT}], the model servers' port)");
    }
    return Integer.toString(n.intValue());
  }
}
