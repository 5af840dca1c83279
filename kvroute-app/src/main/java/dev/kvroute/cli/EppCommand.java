package dev.kvroute.cli;

import dev.kvroute.epp.EppServer;
import dev.kvroute.epp.InferencePools;
import dev.kvroute.proxy.config.ConfigException;
import dev.kvroute.proxy.config.DiscoveryConfig;
import dev.kvroute.proxy.config.KubernetesDiscoveryConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Level;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code kvroute epp}: kvroute as the Gateway API Inference Extension's endpoint picker. An Envoy-based
 * gateway calls it over {@code ext_proc} for every request to an {@code InferencePool} and forwards the
 * request itself to the endpoint kvroute names. It reads {@code serve}'s YAML configuration
 * ({@code --config}: policy, tokenizer, index, models, admission, health checks, discovery) with the most
 * used of them as flags; {@code serve}'s listener keys ({@code port}, {@code admin}, the relay's timeouts
 * and pools) do not apply.
 *
 * <p>Endpoints come from {@code --pool-name} (the InferencePool's selector and target port), from
 * {@code --discovery kubernetes}, or from {@code --backend} (a static list, for tests and laptops).
 *
 * <p>Not thread-safe (a picocli command object).
 */
@Command(
    name = "epp",
    description = {
      "Run as the Gateway API Inference Extension endpoint picker (Envoy ext_proc).",
      "Example: kvroute epp --pool-name vllm-pool --pool-namespace llm",
      "Reads serve's YAML (--config); see docs/kubernetes.md."
    },
    mixinStandardHelpOptions = true,
    sortOptions = false)
public final class EppCommand implements Callable<Integer> {
  private static final System.Logger LOG = System.getLogger(EppCommand.class.getName());

  @Spec CommandSpec spec;

  @Option(names = "--config", paramLabel = "FILE",
      description = "YAML configuration file, serve's keys (see docs/configuration.md); the flags below override it.")
  Path config;

  @Option(names = "--bind", paramLabel = "ADDR", description = "Address to listen on (default 0.0.0.0).")
  String bind;

  @Option(names = "--backend", paramLabel = "URL[,name=N][,capacityTokens=T]",
      description = "A static endpoint's base URL (tests, laptops); repeat for each.")
  List<String> backends;

  @Option(names = "--policy", paramLabel = "NAME",
      description = "round-robin, random, least-loaded, power-of-two, sticky, cache-aware (default), cost.")
  String policy;

  @Option(names = "--tokenizer", paramLabel = "SPEC", description = "Prompt tokens: o200k_base (default), cl100k_base, or hf:PATH.")
  String tokenizer;

  @Option(names = "--page-size-tokens", paramLabel = "N", description = "Prefix-index page size in tokens. Approximate mode: any size, default 64 (four of vLLM's 16-token blocks: a quarter of the pages to walk and hold; a backend is credited in whole pages); precise and hybrid: the engines' block size or a divisor of it, default 16.")
  Integer pageSizeTokens;

  @Option(names = "--index", paramLabel = "MODE", description = "approximate (default), precise (vLLM KV events) or hybrid.")
  String indexMode;

  @Option(names = "--kv-events-port", paramLabel = "PORT", description = "precise: every engine's KV-event PUB port.")
  Integer kvEventsPort;

  @Option(names = "--admission", negatable = true,
      description = "Answer 429 to sheddable requests (priority < 0) when every endpoint is saturated (default on).")
  Boolean admission;

  @Option(names = "--k8s-selector", paramLabel = "SELECTOR",
      description = "Without --pool-name: label selector of the model server pods (Kubernetes discovery).")
  String k8sSelector;

  @Option(names = "--k8s-port", paramLabel = "NAME|N", description = "With --k8s-selector: the engine's container port.")
  String k8sPort;

  @Option(names = "--k8s-namespace", paramLabel = "NS", description = "With --k8s-selector: the pods' namespace (default: this pod's).")
  String k8sNamespace;

  @Option(names = "--kubeconfig", paramLabel = "FILE",
      description = "kubeconfig file (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config).")
  String kubeconfig;

  @Option(names = "--grpc-port", paramLabel = "PORT", description = "ext_proc and gRPC health port; 0 = ephemeral (default 9002).")
  int grpcPort = 9002;

  @Option(names = "--metrics-port", paramLabel = "PORT", description = "Prometheus /metrics port; -1 = off (default 9090).")
  int metricsPort = 9090;

  @Option(names = "--fallbacks", paramLabel = "N",
      description = "Endpoints named after the chosen one, as fallbacks for the gateway's retries (default 2).")
  int fallbacks = 2;

  @Option(names = "--pool-name", paramLabel = "NAME", description = "The InferencePool whose endpoints to pick from.")
  String poolName;

  @Option(names = "--pool-namespace", paramLabel = "NS", description = "The InferencePool's namespace (default: this pod's).")
  String poolNamespace = "";

  /** The non-null flags keyed by the YAML path they override. */
  Map<String, Object> overrides() {
    Map<String, Object> o = new LinkedHashMap<>();
    put(o, "bind", bind);
    put(o, "backends", backends);
    put(o, "policy.name", policy);
    put(o, "routing.tokenizer", tokenizer);
    put(o, "routing.pageSizeTokens", pageSizeTokens);
    put(o, "index.mode", indexMode);
    put(o, "index.kvEventsPort", kvEventsPort);
    put(o, "admission.enabled", admission);
    put(o, "discovery.kubernetes.labelSelector", k8sSelector);
    put(o, "discovery.kubernetes.port", k8sPort);
    put(o, "discovery.kubernetes.namespace", k8sNamespace);
    put(o, "discovery.kubernetes.kubeconfig", k8sSelector == null ? null : kubeconfig);
    return o;
  }

  /** A listening port flag: 0 (ephemeral) or 1..65535, or -1 (off) where {@code offAllowed}. */
  static void checkPort(String flag, int port, boolean offAllowed) {
    if (port < (offAllowed ? -1 : 0) || port > 65535) {
      throw new ConfigException(flag + ": " + port + " (expected: " + (offAllowed ? "-1 (off), " : "")
          + "0 (ephemeral) or 1..65535)");
    }
  }

  private static void put(Map<String, Object> o, String key, Object value) {
    if (value != null) {
      o.put(key, value);
    }
  }

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter err = spec.commandLine().getErr();
    ProxyConfig cfg;
    try {
      checkPort("--grpc-port", grpcPort, false);
      checkPort("--metrics-port", metricsPort, true);
      if (poolName == null && k8sSelector != null && backends != null) {
        throw new ConfigException("--k8s-selector " + k8sSelector + " with --backend (expected: one source of"
            + " endpoints: --pool-name for an InferencePool, --k8s-selector for pods, or --backend for a static list)");
      }
      cfg = K8sFlags.load(config, overrides(), k8sSelector, k8sPort);
      if (poolName == null && !cfg.backends().isEmpty() && cfg.discovery().enabled()) {
        throw new ConfigException((k8sSelector != null ? "--k8s-selector " + k8sSelector : "discovery.kubernetes in " + config)
            + " with " + (backends != null ? "--backend" : "backends in " + config) + " (expected: one source of"
            + " endpoints: --pool-name for an InferencePool, --k8s-selector for pods, or --backend for a static list)");
      }
      if (poolName != null && (!cfg.backends().isEmpty() || k8sSelector != null)) {
        throw new ConfigException("--pool-name " + poolName + " with " + (k8sSelector != null ? "--k8s-selector"
            : backends != null ? "--backend" : "backends in " + config) + " (expected: one source of endpoints:"
            + " --pool-name for an InferencePool, --k8s-selector for pods, or --backend for a static list)");
      }
      if (poolName != null) {
        KubernetesDiscoveryConfig base = cfg.discovery().kubernetes();
        cfg = cfg.withDiscovery(new DiscoveryConfig(InferencePools.discovery(poolNamespace, poolName,
            base == null ? kubeconfig : base.kubeconfig(),
            base == null ? Duration.ofMinutes(5) : base.resyncPeriod(),
            base == null ? Duration.ofSeconds(10) : base.startTimeout())));
      }
      if (cfg.backends().isEmpty() && !cfg.discovery().enabled()) {
        throw new ConfigException("backends: none (expected: --pool-name, --k8s-selector with --k8s-port, or --backend URL)");
      }
      if (fallbacks < 0) {
        throw new ConfigException("--fallbacks: " + fallbacks + " (expected: >= 0)");
      }
    } catch (ConfigException | IllegalArgumentException e) {
      err.println("kvroute epp: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.USAGE;
    } catch (IllegalStateException e) {
      err.println("kvroute epp: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.SOFTWARE;
    }
    EppServer server;
    try {
      server = EppServer.start(cfg, grpcPort, metricsPort, fallbacks);
    } catch (ConfigException e) {
      err.println("kvroute epp: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.USAGE;
    } catch (IllegalStateException e) {
      err.println("kvroute epp: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.SOFTWARE;
    }
    Duration drain = cfg.timeouts().drain();
    CountDownLatch stopped = new CountDownLatch(1);
    Thread hook = new Thread(() -> {
      err.print(dev.kvroute.cli.logging.Logging.line(Level.INFO, EppCommand.class.getName(),
          "shutting down; not ready, finishing streams in progress (up to " + drain.toMillis() + " ms)"));
      err.flush();
      try {
        server.drain(drain);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        server.close();
        stopped.countDown();
      }
    }, "kvroute-epp-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    LOG.log(System.Logger.Level.INFO, "kvroute epp: ext_proc on " + cfg.bind() + ":" + server.grpcPort()
        + (server.metricsPort() < 0 ? "" : ", metrics on :" + server.metricsPort()) + ", policy " + cfg.policy().name()
        + ", index " + cfg.index().mode() + " in " + cfg.routing().pageSizeTokens() + "-token pages"
        + ", " + server.picker().routableEndpoints().size() + " endpoints ready"
        + (poolName == null ? "" : ", InferencePool " + poolName) + ", fallbacks " + fallbacks);
    stopped.await();
    return 0;
  }
}
