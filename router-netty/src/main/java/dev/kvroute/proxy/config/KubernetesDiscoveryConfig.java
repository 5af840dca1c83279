package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * Backends discovered from Kubernetes pods ({@code discovery.kubernetes} in YAML, {@code --discovery
 * kubernetes} and the {@code --k8s-*} flags): the pods matching {@link #labelSelector} in
 * {@link #namespace} are watched; a ready pod (condition {@code Ready=True}, an IP, no deletion
 * timestamp) is a backend {@code http://POD_IP:PORT} named after the pod, a pod that turns not ready or
 * terminating drains, a deleted pod leaves. The Helm chart under {@code deploy/helm/kvroute} writes
 * this section.
 *
 * <pre>
 * discovery:
 *   kubernetes:
 *     namespace: llm             # optional; default: the router pod's own namespace, else "default"
 *     labelSelector: app=vllm
 *     port: http                 # the engine's container port, by name or number
 *     kubeconfig: /path/config   # optional; default: in-cluster service account, else ~/.kube/config
 * </pre>
 *
 * <p>Immutable and thread-safe.
 *
 * @param namespace the pods' namespace; empty (the default) means the namespace of the client's
 *     configuration: the service account's namespace in a pod, the kubeconfig context's otherwise, else
 *     {@code default}
 * @param labelSelector a Kubernetes label selector ({@code app=vllm}, {@code app=vllm,tier in (a,b)}); not
 *     empty (an empty selector would take every pod of the namespace)
 * @param port the engine's port: a container port name ({@code http}, up to 15 lowercase letters,
 *     digits and '-') looked up in each pod's containers, or a number in 1..65535
 * @param kubeconfig path of a kubeconfig file; {@code null} (the default) means fabric8's
 *     auto-configuration: the in-cluster service account, else {@code $KUBECONFIG} or
 *     {@code ~/.kube/config}
 * @param resyncPeriod how often the watcher re-delivers every cached pod, so a missed change is applied
 *     at the latest after this long. Default 5m
 * @param startTimeout the longest wait for the first list of pods when the router starts; an API server
 *     unreachable (or refusing) for that long fails the start. Default 10s
 */
public record KubernetesDiscoveryConfig(
    String namespace,
    String labelSelector,
    String port,
    String kubeconfig,
    Duration resyncPeriod,
    Duration startTimeout) {

  public KubernetesDiscoveryConfig {
    namespace = namespace == null ? "" : namespace.trim();
    if (!namespace.isEmpty() && !namespace.matches("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")) {
      throw new IllegalArgumentException("namespace: " + namespace
          + " (expected: a Kubernetes namespace name, lowercase letters, digits and '-', or empty for the router's own)");
    }
    if (labelSelector == null || labelSelector.isBlank()) {
      throw new IllegalArgumentException("labelSelector: " + (labelSelector == null ? "none" : "empty")
          + " (expected: a label selector such as app=vllm; the pods of the inference engines)");
    }
    labelSelector = labelSelector.trim();
    if (port == null || port.isBlank()) {
      throw new IllegalArgumentException("port: none (expected: the engine's container port name, such as http, or number)");
    }
    port = port.trim();
    if (port.chars().allMatch(Character::isDigit)) {
      int p = port.length() > 5 ? -1 : Integer.parseInt(port);
      if (p < 1 || p > 65_535) {
        throw new IllegalArgumentException("port: " + port + " (expected: a port number in 1..65535 or a port name)");
      }
    } else if (!port.matches("[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?") || !port.matches(".*[a-z].*")) {
      throw new IllegalArgumentException("port: " + port
          + " (expected: a container port name, up to 15 lowercase letters, digits and '-', or a number)");
    }
    if (kubeconfig != null && kubeconfig.isBlank()) {
      kubeconfig = null;
    }
    resyncPeriod = resyncPeriod == null ? Duration.ofMinutes(5) : Checks.positive("resyncPeriod", resyncPeriod);
    startTimeout = startTimeout == null ? Duration.ofSeconds(10) : Checks.positive("startTimeout", startTimeout);
  }

  /** Pods matching {@code labelSelector} in {@code namespace} (empty: the client's), port {@code port}, other settings default. */
  public static KubernetesDiscoveryConfig of(String namespace, String labelSelector, String port) {
    return new KubernetesDiscoveryConfig(namespace, labelSelector, port, null, null, null);
  }

  /** A copy reading the cluster's address and credentials from {@code kubeconfig} ({@code null}: auto-configuration). */
  public KubernetesDiscoveryConfig withKubeconfig(String kubeconfig) {
    return new KubernetesDiscoveryConfig(namespace, labelSelector, port, kubeconfig, resyncPeriod, startTimeout);
  }

  /** A copy waiting at most {@code startTimeout} for the first list of pods. */
  public KubernetesDiscoveryConfig withStartTimeout(Duration startTimeout) {
    return new KubernetesDiscoveryConfig(namespace, labelSelector, port, kubeconfig, resyncPeriod, startTimeout);
  }

  /** A copy re-delivering the cached pods every {@code resyncPeriod}. */
  public KubernetesDiscoveryConfig withResyncPeriod(Duration resyncPeriod) {
    return new KubernetesDiscoveryConfig(namespace, labelSelector, port, kubeconfig, resyncPeriod, startTimeout);
  }

  /** The port as a number, or {@code -1} when it is a container port name. */
  public int portNumber() {
    return port.chars().allMatch(Character::isDigit) ? Integer.parseInt(port) : -1;
  }
}
