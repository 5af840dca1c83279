package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.KubernetesDiscoveryConfig;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerPort;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodCondition;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Backends from Kubernetes pods: a fabric8 shared informer watches the pods matching a label selector
 * in one namespace (get, list and watch on {@code pods}, nothing else) and keeps the
 * {@link BackendRegistry} in step.
 *
 * <ul>
 *   <li>A ready pod (condition {@code Ready=True}, a pod IP, no deletion timestamp) becomes the backend
 *       {@code http://POD_IP:PORT} named after the pod, its KV capacity from the
 *       {@value #CAPACITY_ANNOTATION} annotation when present (else read from the engine as for any
 *       backend), its models from the {@value #MODELS_ANNOTATION} annotation (comma-separated) when
 *       present (else from its {@code /v1/models}). Annotations are read when the backend is added.
 *   <li>A pod of ours that turns not ready or terminating drains: no new request goes there, the
 *       requests in flight finish. Ready again, it takes requests again.
 *   <li>A deleted pod leaves, with its index view ({@link BackendRegistry#remove}); requests in flight on
 *       it finish. A pod whose IP or port changed is removed and added again (its cache is gone).
 *   <li>Static and admin-API backends are never touched: discovery changes only the backends it added.
 *       A pod whose name or address is already taken by another backend is skipped with a warning.
 * </ul>
 *
 * <p>Start-up lists the pods once, bounded by {@code startTimeout}: an API server that is unreachable
 * or refuses (RBAC) fails {@link #start} with an {@link IllegalStateException} saying which. Afterwards
 * the informer reconnects and relists by itself after a dropped watch, and re-delivers its cache every
 * {@code resyncPeriod}; while the API server is unreachable the last known fleet stays (one WARNING
 * line per outage, one INFO line when the watch is back).
 *
 * <p>Thread-safe: the informer delivers events on one thread; {@link #close} may be called from any.
 */
final class KubernetesDiscovery implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(KubernetesDiscovery.class.getName());

  /** Pod annotation: the engine's KV cache capacity in tokens (a whole number). */
  static final String CAPACITY_ANNOTATION = "kvroute.dev/capacity-tokens";
  /** Pod annotation: the models and LoRA adapters the engine serves, comma-separated (else its /v1/models). */
  static final String MODELS_ANNOTATION = "kvroute.dev/models";

  private final KubernetesDiscoveryConfig config;
  private final BackendRegistry registry;
  private final KubernetesClient client;
  private final String namespace;
  /** The backends this discovery added, by pod name (touched only on the informer's thread). */
  private final Map<String, BackendConfig> ours = new HashMap<>();
  private final ScheduledExecutorService watchdog;
  private SharedIndexInformer<Pod> informer;
  private volatile boolean outage;

  private KubernetesDiscovery(KubernetesDiscoveryConfig config, BackendRegistry registry, KubernetesClient client) {
    this.config = config;
    this.registry = registry;
    this.client = client;
    String ns = config.namespace().isEmpty() ? client.getNamespace() : config.namespace();
    this.namespace = ns == null || ns.isEmpty() ? "default" : ns;
    this.watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "kvroute-k8s-watchdog");
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Connects to the API server, lists the matching pods (at most {@code startTimeout}), registers the
   * ready ones and starts watching.
   *
   * @throws IllegalStateException one line saying why discovery could not start: the kubeconfig is
   *     unreadable, the API server is unreachable or did not answer in time, or it refused the list
   */
  static KubernetesDiscovery start(KubernetesDiscoveryConfig config, BackendRegistry registry) {
    KubernetesClient client = new KubernetesClientBuilder().withConfig(clientConfig(config)).build();
    KubernetesDiscovery d = new KubernetesDiscovery(config, registry, client);
    try {
      d.startWatching();
    } catch (RuntimeException e) {
      d.close();
      throw e;
    }
    return d;
  }

  private static Config clientConfig(KubernetesDiscoveryConfig config) {
    Config base;
    if (config.kubeconfig() != null) {
      Path path = Path.of(config.kubeconfig());
      try {
        base = Config.fromKubeconfig(null, Files.readString(path), path.toString());
      } catch (IOException | RuntimeException e) {
        throw new IllegalStateException("kubernetes discovery: cannot read kubeconfig " + path + ": " + e.getMessage(), e);
      }
    } else {
      String missing = KubernetesEnvironment.missing(null);
      if (missing != null) {
        throw new IllegalStateException("kubernetes discovery: " + missing
            + " (expected: run in the cluster with a service account, or give --kubeconfig)");
      }
      base = Config.autoConfigure(null);
    }
    int startMillis = (int) Math.min(Integer.MAX_VALUE, config.startTimeout().toMillis());
    // no retries of their own: the start-up list is bounded by startTimeout, and the informer reconnects
    return new ConfigBuilder(base)
        .withConnectionTimeout(startMillis)
        .withRequestRetryBackoffLimit(0)
        .build();
  }

  private void startWatching() {
    String where = "pods " + config.labelSelector() + " in namespace " + namespace + " at "
        + client.getConfiguration().getMasterUrl();
    // the start-up list: an unreachable or refusing API server is an error now, not a silent retry loop
    CompletableFuture<List<Pod>> first = CompletableFuture.supplyAsync(
        () -> client.pods().inNamespace(namespace).withLabelSelector(config.labelSelector()).list().getItems());
    List<Pod> pods;
    try {
      pods = first.get(config.startTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      first.cancel(true);
      throw new IllegalStateException("kubernetes discovery: cannot list " + where + ": no answer within "
          + config.startTimeout().toMillis() + " ms");
    } catch (ExecutionException e) {
      throw new IllegalStateException("kubernetes discovery: cannot list " + where + ": " + oneLine(e.getCause()), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("kubernetes discovery: interrupted while listing " + where, e);
    }
    for (Pod p : pods) {
      apply(p);
    }
    informer = client.pods().inNamespace(namespace).withLabelSelector(config.labelSelector())
        .runnableInformer(config.resyncPeriod().toMillis());
    informer.addEventHandler(new ResourceEventHandler<>() {
      @Override
      public void onAdd(Pod pod) {
        apply(pod);
      }

      @Override
      public void onUpdate(Pod oldPod, Pod newPod) {
        apply(newPod);
      }

      @Override
      public void onDelete(Pod pod, boolean finalStateUnknown) {
        remove(pod.getMetadata().getName(), "deleted");
      }
    });
    // the informer lists again: what changed since the list above is settled against its cache
    CompletableFuture<Void> synced = informer.start().toCompletableFuture();
    try {
      synced.get(config.startTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException | ExecutionException e) {
      throw new IllegalStateException("kubernetes discovery: cannot watch " + where + ": "
          + (e instanceof TimeoutException ? "no answer within " + config.startTimeout().toMillis() + " ms" : oneLine(e.getCause())), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("kubernetes discovery: interrupted while watching " + where, e);
    }
    reconcile(informer.getStore().list());
    long checkMillis = Math.max(200, Math.min(2_000, config.startTimeout().toMillis() / 5));
    watchdog.scheduleWithFixedDelay(this::checkWatch, checkMillis, checkMillis, TimeUnit.MILLISECONDS);
    LOG.log(Level.INFO, "kubernetes discovery: watching {0}: {1} ready of {2}", where,
        String.valueOf(ours.size()), String.valueOf(pods.size()));
  }

  /** One WARNING line when the watch is lost (the last known fleet stays), one INFO line when it is back. */
  private void checkWatch() {
    SharedIndexInformer<Pod> inf = informer;
    if (inf == null || !inf.hasSynced()) {
      return;
    }
    boolean watching = inf.isWatching();
    if (!watching && !outage) {
      outage = true;
      LOG.log(Level.WARNING, "kubernetes discovery: lost the watch on pods in namespace " + namespace
          + " (API server unreachable?); keeping the last known backends and reconnecting");
    } else if (watching && outage) {
      outage = false;
      LOG.log(Level.INFO, "kubernetes discovery: watching pods in namespace " + namespace + " again");
    }
  }

  /** Whether the watch is down now (the WARNING was logged and the last known fleet is kept). */
  boolean outage() {
    return outage;
  }

  /** Whether the informer's watch is open now. */
  boolean watching() {
    SharedIndexInformer<Pod> inf = informer;
    return inf != null && inf.isWatching();
  }

  /** The namespace watched. */
  String namespace() {
    return namespace;
  }

  /** Applies every pod of {@code pods} and removes the backends of ours whose pod is not among them. */
  private synchronized void reconcile(List<Pod> pods) {
    java.util.Set<String> names = new java.util.HashSet<>();
    for (Pod p : pods) {
      names.add(p.getMetadata().getName());
      apply(p);
    }
    for (String name : List.copyOf(ours.keySet())) {
      if (!names.contains(name)) {
        remove(name, "gone");
      }
    }
  }

  /** Brings the registry in line with {@code pod}'s current state. */
  private synchronized void apply(Pod pod) {
    String name = pod.getMetadata().getName();
    boolean ready = ready(pod);
    URI url = url(pod);
    BackendConfig mine = ours.get(name);
    if (mine != null && url != null && !mine.url().equals(url)) {
      remove(name, "moved to " + url);
      mine = null;
    }
    if (mine == null) {
      if (ready && url != null) {
        add(name, url, capacity(pod), models(pod));
      }
      return;
    }
    if (registry.draining(BackendId.of(name), !ready)) {
      LOG.log(Level.INFO, "kubernetes discovery: backend {0} {1}", name,
          ready ? "is ready again" : pod.getMetadata().getDeletionTimestamp() != null
              ? "is terminating; draining" : "is not ready; draining");
    }
  }

  private void add(String name, URI url, long capacityTokens, List<String> models) {
    BackendConfig cfg;
    try {
      cfg = new BackendConfig(url, name, capacityTokens, models);
      registry.add(cfg);
    } catch (IllegalArgumentException e) {
      LOG.log(Level.WARNING, "kubernetes discovery: pod " + name + " skipped: " + e.getMessage());
      return;
    }
    ours.put(name, cfg);
    LOG.log(Level.INFO, "kubernetes discovery: backend {0} added at {1}", name, url);
  }

  private synchronized void remove(String name, String why) {
    if (ours.remove(name) != null && registry.remove(BackendId.of(name)) != null) {
      LOG.log(Level.INFO, "kubernetes discovery: backend {0} removed ({1})", name, why);
    }
  }

  /** Ready: condition {@code Ready=True}, an IP, and not being deleted. */
  static boolean ready(Pod pod) {
    if (pod.getMetadata().getDeletionTimestamp() != null || pod.getStatus() == null) {
      return false;
    }
    String ip = pod.getStatus().getPodIP();
    if (ip == null || ip.isEmpty() || pod.getStatus().getConditions() == null) {
      return false;
    }
    for (PodCondition c : pod.getStatus().getConditions()) {
      if ("Ready".equals(c.getType())) {
        return "True".equals(c.getStatus());
      }
    }
    return false;
  }

  /** {@code http://POD_IP:PORT}, or {@code null} when the pod has no IP yet or no such port. */
  private URI url(Pod pod) {
    if (pod.getStatus() == null || pod.getStatus().getPodIP() == null || pod.getStatus().getPodIP().isEmpty()) {
      return null;
    }
    int port = config.portNumber();
    if (port < 0) {
      port = namedPort(pod, config.port());
      if (port < 0) {
        LOG.log(Level.WARNING, "kubernetes discovery: pod " + pod.getMetadata().getName()
            + " has no container port named " + config.port() + "; not routed to");
        return null;
      }
    }
    String ip = pod.getStatus().getPodIP();
    return URI.create("http://" + (ip.indexOf(':') >= 0 ? "[" + ip + "]" : ip) + ":" + port);
  }

  private static int namedPort(Pod pod, String name) {
    if (pod.getSpec() == null || pod.getSpec().getContainers() == null) {
      return -1;
    }
    for (Container c : pod.getSpec().getContainers()) {
      if (c.getPorts() != null) {
        for (ContainerPort p : c.getPorts()) {
          if (name.equals(p.getName()) && p.getContainerPort() != null) {
            return p.getContainerPort();
          }
        }
      }
    }
    return -1;
  }

  /** The {@value #MODELS_ANNOTATION} annotation's names; empty (discover from /v1/models) when absent. */
  private static List<String> models(Pod pod) {
    Map<String, String> a = pod.getMetadata().getAnnotations();
    String v = a == null ? null : a.get(MODELS_ANNOTATION);
    if (v == null) {
      return List.of();
    }
    return java.util.Arrays.stream(v.split(",")).map(String::trim).filter(m -> !m.isEmpty()).toList();
  }

  /** The {@value #CAPACITY_ANNOTATION} annotation, or 0 (read from the engine) when absent or malformed. */
  private static long capacity(Pod pod) {
    Map<String, String> a = pod.getMetadata().getAnnotations();
    String v = a == null ? null : a.get(CAPACITY_ANNOTATION);
    if (v == null) {
      return 0;
    }
    try {
      long tokens = Long.parseLong(v.trim());
      if (tokens >= 0 && tokens <= BackendConfig.MAX_CAPACITY_TOKENS) {
        return tokens;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    LOG.log(Level.WARNING, "kubernetes discovery: pod " + pod.getMetadata().getName() + ": annotation "
        + CAPACITY_ANNOTATION + "=" + v + " ignored (expected: a whole number of tokens in 0.."
        + BackendConfig.MAX_CAPACITY_TOKENS + ")");
    return 0;
  }

  /** {@code t}'s message and its root cause's (e.g. "Connection refused"), on one line. */
  private static String oneLine(Throwable t) {
    String m = t.getMessage() == null ? t.toString() : t.getMessage();
    Throwable root = t;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    if (root != t) {
      String r = root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
      if (!m.contains(r)) {
        m = m + " (" + r + ")";
      }
    }
    return m.replaceAll("\\s+", " ").trim();
  }

  /** Stops watching; the backends it added stay registered (the router is closing or discovery ends). */
  @Override
  public void close() {
    watchdog.shutdownNow();
    if (informer != null) {
      informer.close();
    }
    client.close();
  }
}
