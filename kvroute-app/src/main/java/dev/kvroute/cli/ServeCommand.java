package dev.kvroute.cli;

import dev.kvroute.cli.logging.Logging;
import dev.kvroute.core.RouterCore;
import dev.kvroute.proxy.KvrouteServer;
import dev.kvroute.proxy.config.ConfigException;
import dev.kvroute.proxy.config.ConfigLoader;
import dev.kvroute.proxy.config.DiscoveryConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.io.PrintWriter;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.lang.reflect.Field;
import java.nio.file.Path;
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
 * {@code kvroute serve}: runs the proxy in front of vLLM or SGLang replicas (or bundled mock engines).
 *
 * <p>Every option has a flag here and a key in the YAML file ({@code --config}); flags win over the
 * file, the file over the defaults. {@code docs/configuration.md} documents the file.
 *
 * <p>About 600 lines, as one unit: nearly all of it is the flag declarations, one per configuration
 * key, which picocli needs on one command object; the logic is the small overlay of flags onto the
 * loaded file ({@code overrides()}) and the start-up.
 *
 * <p>Not thread-safe (a picocli command object).
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Run the cache-aware proxy in front of vLLM/SGLang replicas.",
      "Example: kvroute serve --backend http://10.0.0.5:8000 --backend http://10.0.0.6:8000 --policy cache-aware",
      "Without --backend, --mock-backends N starts N bundled mock engines in this process."
    },
    sortOptions = false)
public final class ServeCommand implements Callable<Integer> {
  private static final System.Logger LOG = System.getLogger(ServeCommand.class.getName());

  /** The YAML key an option overrides. */
  @Retention(RetentionPolicy.RUNTIME)
  @Target(ElementType.FIELD)
  @interface YamlKey {
    String value();
  }

  @Spec CommandSpec spec;

  @Option(names = "--config", paramLabel = "FILE", description = "YAML configuration file (see docs/configuration.md).")
  Path config;

  @Option(names = "--print-config", description = "Print the effective configuration as YAML and exit.")
  boolean printConfig;

  @YamlKey("bind")
  @Option(names = "--bind", paramLabel = "ADDR", description = "Address to listen on (default 0.0.0.0).")
  String bind;

  @YamlKey("port")
  @Option(names = "--port", paramLabel = "PORT", description = "Proxy port; 0 = ephemeral (default 8080).")
  Integer port;

  @YamlKey("backends")
  @Option(names = "--backend", paramLabel = "URL[,name=N][,capacityTokens=T]",
      description = "A replica's base URL; repeat for each. capacityTokens: its KV capacity (default: read from its /metrics).")
  List<String> backends;

  @YamlKey("mockBackends")
  @Option(names = "--mock-backends", paramLabel = "N", description = "With no --backend: start N bundled mock engines in-process.")
  Integer mockBackends;

  @YamlKey("eventLoopThreads")
  @Option(names = "--event-loop-threads", paramLabel = "N", description = "Netty event loop threads; 0 = 2 x cores (default 0).")
  Integer eventLoopThreads;

  @YamlKey("policy.name")
  @Option(names = "--policy", paramLabel = "NAME",
      description = "round-robin, random, least-loaded, power-of-two, sticky, cache-aware (default), cost.")
  String policy;

  @YamlKey("policy.cacheThreshold")
  @Option(names = "--cache-threshold", paramLabel = "0..1", description = "cache-aware: matched fraction needed for a hit (default 0.3).")
  Double cacheThreshold;

  @YamlKey("policy.balanceAbsThreshold")
  @Option(names = "--balance-abs-threshold", paramLabel = "N", description = "cache-aware: imbalance when max-min load > N (default 64).")
  Long balanceAbsThreshold;

  @YamlKey("policy.balanceRelThreshold")
  @Option(names = "--balance-rel-threshold", paramLabel = "R", description = "cache-aware: ...and max > R x min (default 1.5).")
  Double balanceRelThreshold;

  @YamlKey("policy.loadMeasure")
  @Option(names = "--load-measure", paramLabel = "M", description = "Load compared by load rules: in-flight (default) or prefilling.")
  String loadMeasure;

  @YamlKey("policy.virtualNodes")
  @Option(names = "--virtual-nodes", paramLabel = "N", description = "sticky: ring points per backend (default 160).")
  Integer virtualNodes;

  @YamlKey("policy.prefillWeight")
  @Option(names = "--prefill-weight", paramLabel = "W", description = "cost: weight of a prefill token (default 1.0).")
  Double prefillWeight;

  @YamlKey("policy.decodeWeight")
  @Option(names = "--decode-weight", paramLabel = "W", description = "cost: weight of a decode token-equivalent (default 1.0).")
  Double decodeWeight;

  @YamlKey("policy.decodeTokensPerRequest")
  @Option(names = "--decode-tokens-per-request", paramLabel = "T", description = "cost: KV tokens per active decode (default 1024).")
  Long decodeTokensPerRequest;

  @YamlKey("policy.foreignLoad")
  @Option(names = "--foreign-load", negatable = true,
      description = "Count the load engines report beyond this router's own (other routers, direct clients) in load-based rules (default off).")
  Boolean foreignLoad;

  @YamlKey("policy.seed")
  @Option(names = "--policy-seed", paramLabel = "S", description = "Seed of the policy's random draws (default 42).")
  Long policySeed;

  @YamlKey("routing.sessionHeader")
  @Option(names = "--session-header", paramLabel = "NAME", description = "Header carrying a session key (default x-session-id).")
  String sessionHeader;

  @YamlKey("routing.sessionField")
  @Option(names = "--session-field", paramLabel = "PATH", description = "Body field carrying a session key when the header is absent (default user).")
  String sessionField;

  @YamlKey("routing.tokenizer")
  @Option(names = "--tokenizer", paramLabel = "SPEC", description = "Prompt tokens: a jtokkit encoding "
      + "(o200k_base, the default; cl100k_base), hf:PATH (the model's tokenizer.json and chat template, PATH "
      + "the file or its directory: the engine's exact tokens), or engine (ask a backend's POST /tokenize, "
      + "cached by message prefix; o200k_base when it does not answer in time). Per model: routing.tokenizers "
      + "in --config.")
  String tokenizer;

  @YamlKey("routing.tokenizerTimeout")
  @Option(names = "--tokenizer-timeout", paramLabel = "DUR", description = "With --tokenizer engine: how long "
      + "to wait for the engine's /tokenize before routing on o200k_base tokens (default 200ms).")
  String tokenizerTimeout;

  @YamlKey("routing.tokenizerReuse")
  @Option(names = "--tokenizer-reuse", paramLabel = "SHARE", description = "With --tokenizer engine: the largest "
      + "share (0 to 1) of a chat's message bytes that may be new since the engine tokenized an earlier turn for "
      + "the router to reuse that turn's tokens without asking; 0 asks for every new request (default 0.25).")
  Double tokenizerReuse;

  @YamlKey("routing.pageSizeTokens")
  @Option(names = "--page-size-tokens", paramLabel = "N", description = "Prefix-index page size in tokens. Approximate mode: any size, default 64 (four of vLLM's 16-token blocks: a quarter of the pages to walk and hold; a backend is credited in whole pages); precise and hybrid: the engines' block size or a divisor of it, default 16.")
  Integer pageSizeTokens;

  @YamlKey("routing.defaultCapacityTokens")
  @Option(names = "--default-capacity-tokens", paramLabel = "N",
      description = "KV capacity assumed when neither configured nor readable from /metrics (default 524288).")
  Long defaultCapacityTokens;

  @YamlKey("admin.port")
  @Option(names = "--admin-port", paramLabel = "PORT", description = "Admin API port; 0 = ephemeral, -1 = off (default 8081).")
  Integer adminPort;

  @YamlKey("admin.bind")
  @Option(names = "--admin-bind", paramLabel = "ADDR", description = "Admin API address (default 127.0.0.1).")
  String adminBind;

  @YamlKey("admin.token")
  @Option(names = "--admin-token", paramLabel = "TOKEN", defaultValue = "${env:KVROUTE_ADMIN_TOKEN}",
      description = "Bearer token required by the admin API (default: $KVROUTE_ADMIN_TOKEN, else none).")
  String adminToken;

  @YamlKey("admin.insecureNoToken")
  @Option(names = "--admin-insecure-no-token",
      description = "Allow a non-loopback --admin-bind without a token (anyone reaching the port can add backends); logged as a warning.")
  Boolean adminInsecureNoToken;

  @YamlKey("admin.maxBodyBytes")
  @Option(names = "--admin-max-body-bytes", paramLabel = "N", description = "Largest admin request body; 413 beyond (default 1048576).")
  Long adminMaxBodyBytes;

  @YamlKey("admin.readTimeout")
  @Option(names = "--admin-read-timeout", paramLabel = "DUR", description = "Admin request head to end of body; 408 beyond (default 10s).")
  String adminReadTimeout;

  @YamlKey("admin.idleTimeout")
  @Option(names = "--admin-idle-timeout", paramLabel = "DUR",
      description = "Longest wait for an admin connection's next request head; closed beyond (default 30s).")
  String adminIdleTimeout;

  @YamlKey("api.allowedPaths")
  @Option(names = "--api-path", paramLabel = "PATTERN", split = ",",
      description = "Engine paths clients may reach, replacing the list; 'default' stands for the data-plane set, * is one segment, a final ** any (see docs/operations.md#security).")
  List<String> apiPaths;

  @YamlKey("timeouts.connect")
  @Option(names = "--connect-timeout", paramLabel = "DUR", description = "Upstream connect timeout (default 3s).")
  String connectTimeout;

  @YamlKey("timeouts.firstByte")
  @Option(names = "--first-byte-timeout", paramLabel = "DUR", description = "Request written to first response body byte (default 300s).")
  String firstByteTimeout;

  @YamlKey("timeouts.idle")
  @Option(names = "--idle-timeout", paramLabel = "DUR", description = "Longest wait for the backend between chunks (default 120s).")
  String idleTimeout;

  @YamlKey("timeouts.client")
  @Option(names = "--client-timeout", paramLabel = "DUR",
      description = "Longest wait for a client's next request (idle keep-alive or a partial head: closed; a partial body: 408) or for it to read (default 60s).")
  String clientTimeout;

  @YamlKey("timeouts.drain")
  @Option(names = "--drain-timeout", paramLabel = "DUR",
      description = "On shutdown (SIGTERM), the longest wait for requests in progress after the router stops accepting connections (default 30s).")
  String drainTimeout;

  @YamlKey("limits.maxBodyBytes")
  @Option(names = "--max-body-bytes", paramLabel = "N", description = "Largest request body; 413 beyond (default 67108864).")
  Long maxBodyBytes;

  @YamlKey("limits.maxHeaderBytes")
  @Option(names = "--max-header-bytes", paramLabel = "N", description = "Largest request header block; 431 beyond (default 16384).")
  Integer maxHeaderBytes;

  @YamlKey("limits.maxInitialLineBytes")
  @Option(names = "--max-initial-line-bytes", paramLabel = "N", description = "Longest request line; 414 beyond (default 8192).")
  Integer maxInitialLineBytes;

  @YamlKey("retries.maxRetries")
  @Option(names = "--max-retries", paramLabel = "N", description = "Retries on another backend before any byte reached the client (default 2).")
  Integer maxRetries;

  @YamlKey("circuitBreaker.enabled")
  @Option(names = "--circuit-breaker", negatable = true, description = "Per-backend circuit breaker (default on).")
  Boolean circuitBreaker;

  @YamlKey("circuitBreaker.failureThreshold")
  @Option(names = "--cb-failure-threshold", paramLabel = "N", description = "Consecutive failures that open a circuit (default 5).")
  Integer cbFailureThreshold;

  @YamlKey("circuitBreaker.openDuration")
  @Option(names = "--cb-open-duration", paramLabel = "DUR", description = "How long a circuit stays open (default 30s).")
  String cbOpenDuration;

  @YamlKey("circuitBreaker.maxEjectionPercent")
  @Option(names = "--cb-max-ejection-percent", paramLabel = "P",
      description = "Largest share of backends with an open circuit at once, percent; one may always open (default 50).")
  Integer cbMaxEjectionPercent;

  @YamlKey("circuitBreaker.successThreshold")
  @Option(names = "--cb-success-threshold", paramLabel = "N", description = "Half-open successes that close a circuit (default 2).")
  Integer cbSuccessThreshold;

  @YamlKey("healthCheck.enabled")
  @Option(names = "--health-check", negatable = true, description = "Active health checks (default on).")
  Boolean healthCheck;

  @YamlKey("healthCheck.path")
  @Option(names = "--health-path", paramLabel = "PATH", description = "Probe path (default /health).")
  String healthPath;

  @YamlKey("healthCheck.interval")
  @Option(names = "--health-interval", paramLabel = "DUR", description = "Time between probes (default 5s).")
  String healthInterval;

  @YamlKey("healthCheck.timeout")
  @Option(names = "--health-timeout", paramLabel = "DUR", description = "Probe timeout (default 5s).")
  String healthTimeout;

  @YamlKey("healthCheck.unhealthyThreshold")
  @Option(names = "--health-unhealthy-threshold", paramLabel = "N", description = "Failed probes that mark a backend unhealthy (default 3).")
  Integer healthUnhealthyThreshold;

  @YamlKey("healthCheck.healthyThreshold")
  @Option(names = "--health-healthy-threshold", paramLabel = "N", description = "Good probes that mark it healthy again (default 2).")
  Integer healthHealthyThreshold;

  @YamlKey("healthCheck.engineLoadInterval")
  @Option(names = "--engine-load-interval", paramLabel = "DUR",
      description = "Time between scrapes of each engine's /metrics for its own load and start time; 0s = off (default 1s).")
  String engineLoadInterval;

  @YamlKey("models.refreshInterval")
  @Option(names = "--models-refresh-interval", paramLabel = "DUR",
      description = "Time between reads of each backend's GET /v1/models (what models and LoRA adapters it serves); 0s ="
          + " only when a backend is added, recovers or restarts, or an adapter is loaded through the admin API (default 30s).")
  String modelsRefreshInterval;

  @YamlKey("models.maxCharsPerToken")
  @Option(names = "--max-chars-per-token", paramLabel = "N",
      description = "Characters one token spans at most: a prompt of C characters is refused with vLLM's 400 before"
          + " tokenizing when C / N tokens cannot fit any serving backend's max_model_len (default 128).")
  Integer maxCharsPerToken;

  @YamlKey("models.loraAffinity")
  @Option(names = "--lora-affinity", negatable = true, paramLabel = "BOOL",
      description = "Prefer replicas running a request's LoRA adapter (vllm:lora_requests_info) while they are at most"
          + " --balance-abs-threshold requests busier than the least-loaded one (default true).")
  Boolean loraAffinity;

  @YamlKey("models.aliases")
  @Option(names = "--model-alias", paramLabel = "PUBLIC=SERVED",
      description = "A public model name routed as a served one (the body's model is rewritten); repeatable.")
  Map<String, String> modelAliases;

  @YamlKey("pool.idleTimeout")
  @Option(names = "--pool-idle-timeout", paramLabel = "DUR", description = "Close pooled connections idle this long (default 4s).")
  String poolIdleTimeout;

  @YamlKey("pool.maxIdlePerBackend")
  @Option(names = "--pool-max-idle", paramLabel = "N", description = "Idle connections kept per backend per event loop (default 64).")
  Integer poolMaxIdle;

  @YamlKey("writeBuffer.lowWaterMarkBytes")
  @Option(names = "--write-low-water-mark", paramLabel = "BYTES", description = "Channel writable again below this (default 32768).")
  Integer lowWaterMark;

  @YamlKey("writeBuffer.highWaterMarkBytes")
  @Option(names = "--write-high-water-mark", paramLabel = "BYTES", description = "Channel unwritable above this (default 65536).")
  Integer highWaterMark;

  @YamlKey("routing.tokenizers")
  @Option(names = "--model-tokenizer", paramLabel = "MODEL=SPEC",
      description = "A model's tokenizer, same forms as --tokenizer (repeatable; routing.tokenizers in --config).")
  Map<String, String> modelTokenizers;

  @YamlKey("admission.enabled")
  @Option(names = "--admission", negatable = true,
      description = "Per-backend concurrency limits and the router's queue; 429/503 with Retry-After (default on).")
  Boolean admission;

  @YamlKey("admission.maxConcurrencyPerBackend")
  @Option(names = "--max-concurrency-per-backend", paramLabel = "N",
      description = "Requests in flight per backend; 0 = derived from the engine's reported batch (default 0).")
  Integer maxConcurrencyPerBackend;

  @YamlKey("admission.initialConcurrencyPerBackend")
  @Option(names = "--initial-concurrency-per-backend", paramLabel = "N",
      description = "Derived limit until the engine has shown a full batch (default 256).")
  Integer initialConcurrencyPerBackend;

  @YamlKey("admission.engineQueueDepth")
  @Option(names = "--engine-queue-depth", paramLabel = "N",
      description = "Requests allowed to wait in an engine beyond its full batch (default 4).")
  Integer engineQueueDepth;

  @YamlKey("admission.kvUsageThreshold")
  @Option(names = "--kv-usage-threshold", paramLabel = "0..1",
      description = "KV usage at which an engine with requests waiting is saturated (default 0.98).")
  Double kvUsageThreshold;

  @YamlKey("admission.maxQueueLength")
  @Option(names = "--max-queue-length", paramLabel = "N", description = "Requests waiting in the router at most; 429 beyond (default 1024).")
  Integer maxQueueLength;

  @YamlKey("admission.maxQueueBytes")
  @Option(names = "--max-queue-bytes", paramLabel = "N", description = "Body bytes waiting in the router at most; 429 beyond (default 268435456).")
  Long maxQueueBytes;

  @YamlKey("admission.queueDeadline")
  @Option(names = "--queue-deadline", paramLabel = "DUR", description = "Longest wait in the router's queue; then 429 (default 30s).")
  String queueDeadline;

  @YamlKey("admission.tenant")
  @Option(names = "--tenant", paramLabel = "FROM",
      description = "Tenant key for fair queuing: api-key, user, header:NAME or none (default api-key).")
  String tenant;

  @YamlKey("admission.priorityHeader")
  @Option(names = "--priority-header", paramLabel = "NAME", description = "Header carrying a request's priority (default x-kvroute-priority).")
  String priorityHeader;

  @YamlKey("admission.tenantPriorities")
  @Option(names = "--tenant-priority", paramLabel = "TENANT=P", description = "A tenant's default priority (repeatable).")
  Map<String, Integer> tenantPriorities;

  @YamlKey("admission.maxTenantLabels")
  @Option(names = "--max-tenant-labels", paramLabel = "N", description = "Tenants named in metrics; the rest are 'other' (default 16).")
  Integer maxTenantLabels;

  @YamlKey("index.mode")
  @Option(names = "--index", paramLabel = "MODE",
      description = "approximate (default: predicted from what was routed), precise (every engine's vLLM KV events) or hybrid (events where a backend names kvEvents=).")
  String indexMode;

  @YamlKey("index.correctFromUsage")
  @Option(names = "--usage-correction", negatable = true, paramLabel = "BOOL",
      description = "A response's cached_tokens below the index's prediction corrects the backend's approximate view (default on; --no-usage-correction turns it off).")
  Boolean usageCorrection;

  @YamlKey("index.kvEventsPort")
  @Option(names = "--kv-events-port", paramLabel = "PORT",
      description = "precise: an engine's KV-event PUB port when its --backend gives no kvEvents= (default 5557, vLLM's).")
  Integer kvEventsPort;

  @YamlKey("index.kvEventsReplayPort")
  @Option(names = "--kv-events-replay-port", paramLabel = "PORT",
      description = "An engine's replay ROUTER port when its --backend gives no kvEventsReplay=; 0 = no replay (default 0).")
  Integer kvEventsReplayPort;

  @YamlKey("index.topic")
  @Option(names = "--kv-events-topic", paramLabel = "PREFIX", description = "KV-event topic prefix to subscribe to (default: every topic).")
  String kvEventsTopic;

  @YamlKey("index.speculativeTtl")
  @Option(names = "--speculative-ttl", paramLabel = "DUR",
      description = "precise/hybrid: a routed prompt counts as held until its events arrive, at most this long; 0s = off (default 2s).")
  String speculativeTtl;

  @YamlKey("index.staleAfter")
  @Option(names = "--kv-events-stale-after", paramLabel = "DUR",
      description = "A backend routed to without any KV event for this long falls back to the approximate view (default 30s).")
  String kvEventsStaleAfter;

  @YamlKey("index.replayTimeout")
  @Option(names = "--kv-events-replay-timeout", paramLabel = "DUR", description = "Longest wait for a replay's answer (default 2s).")
  String kvEventsReplayTimeout;

  @Option(names = "--discovery", paramLabel = "KIND",
      description = "Backends discovered besides --backend: kubernetes (pods, see docs/kubernetes.md) or none (default: as --config says, else none).")
  String discovery;

  @YamlKey("discovery.kubernetes.namespace")
  @Option(names = "--k8s-namespace", paramLabel = "NS", description = "kubernetes: the pods' namespace (default: the router's own, else default).")
  String k8sNamespace;

  @YamlKey("discovery.kubernetes.labelSelector")
  @Option(names = "--k8s-selector", paramLabel = "SELECTOR", description = "kubernetes: label selector of the engine pods, e.g. app=vllm.")
  String k8sSelector;

  @YamlKey("discovery.kubernetes.port")
  @Option(names = "--k8s-port", paramLabel = "NAME|N", description = "kubernetes: the engine's container port, by name or number.")
  String k8sPort;

  @YamlKey("discovery.kubernetes.kubeconfig")
  @Option(names = "--kubeconfig", paramLabel = "FILE",
      description = "kubernetes: kubeconfig file (default: in-cluster service account, else $KUBECONFIG or ~/.kube/config).")
  String kubeconfig;

  @YamlKey("discovery.kubernetes.resyncPeriod")
  @Option(names = "--k8s-resync-period", paramLabel = "DUR", description = "kubernetes: re-deliver every watched pod this often (default 5m).")
  String k8sResyncPeriod;

  @YamlKey("discovery.kubernetes.startTimeout")
  @Option(names = "--k8s-start-timeout", paramLabel = "DUR",
      description = "kubernetes: longest wait for the first list of pods; unreachable longer fails the start (default 10s).")
  String k8sStartTimeout;

  /** The configuration the file and flags describe. */
  ProxyConfig resolve() {
    Map<String, Object> o = overrides();
    boolean k8sFlags = o.keySet().stream().anyMatch(k -> k.startsWith("discovery."));
    if (discovery != null && !discovery.equals("kubernetes") && !discovery.equals("none")) {
      throw new ConfigException("--discovery: " + discovery + " (expected: kubernetes or none)");
    }
    if ("none".equals(discovery)) {
      if (k8sFlags) {
        throw new ConfigException("--discovery: none with --k8s-* or --kubeconfig flags (expected: --discovery kubernetes)");
      }
      return ConfigLoader.load(config, o).withDiscovery(DiscoveryConfig.off());
    }
    ProxyConfig cfg = K8sFlags.load(config, o, k8sSelector, k8sPort); // static backends may join discovered ones
    if ("kubernetes".equals(discovery) && !cfg.discovery().enabled()) {
      throw new ConfigException("discovery.kubernetes: none (expected: --k8s-selector and --k8s-port, "
          + "or a discovery.kubernetes section in --config)");
    }
    return cfg;
  }

  /** The non-null flags keyed by their YAML path. */
  Map<String, Object> overrides() {
    Map<String, Object> o = new LinkedHashMap<>();
    for (Field f : ServeCommand.class.getDeclaredFields()) {
      YamlKey key = f.getAnnotation(YamlKey.class);
      if (key == null) {
        continue;
      }
      try {
        Object v = f.get(this);
        if (v != null) {
          o.put(key.value(), v);
        }
      } catch (IllegalAccessException e) {
        throw new IllegalStateException(e);
      }
    }
    return o;
  }

  /** The YAML keys that have a flag. */
  static List<String> yamlKeysWithFlags() {
    return java.util.Arrays.stream(ServeCommand.class.getDeclaredFields())
        .map(f -> f.getAnnotation(YamlKey.class))
        .filter(java.util.Objects::nonNull)
        .map(YamlKey::value)
        .toList();
  }

  @Option(names = "--warm-up-requests", paramLabel = "N", defaultValue = "${env:KVROUTE_WARM_UP_REQUESTS:-8000}",
      description = "Before listening, send N synthetic chat requests through a throwaway copy of the proxy in front "
          + "of in-process zero-cost backends, so the first real requests find the hot path compiled; 0 = off "
          + "(default ${DEFAULT-VALUE}, or $KVROUTE_WARM_UP_REQUESTS).")
  int warmUpRequests;

  @Option(names = "--warm-up-max", paramLabel = "DUR", defaultValue = "45s",
      description = "Longest warm-up; it stops there with fewer requests (default ${DEFAULT-VALUE}).")
  String warmUpMax;

  @Option(names = "--warm-up-only", hidden = true,
      description = "Run the warm-up and exit without serving (the launcher's class-data-sharing training run).")
  boolean warmUpOnly;

  @Override
  public Integer call() throws InterruptedException {
    PrintWriter err = spec.commandLine().getErr();
    PrintWriter out = spec.commandLine().getOut();
    ProxyConfig cfg;
    RouterCore core;
    try {
      cfg = resolve();
      // The policy and tokenizer names are checked here, before the backend list, so that a wrong name
      // is reported as such with or without backends.
      core = KvrouteServer.createCore(cfg);
      if (printConfig) {
        // No backend is fine here: the output (with "backends: []") is the start of a file. The
        // admin token (perhaps from the environment) is not printed.
        out.print(ConfigLoader.toYaml(cfg.withoutSecrets()));
        out.flush();
        return 0;
      }
      if (cfg.backends().isEmpty() && cfg.mockBackends() == 0 && !cfg.discovery().enabled() && !warmUpOnly) {
        throw new ConfigException("backends: none (expected: --backend URL, a backends list in --config, "
            + "--mock-backends N, or --discovery kubernetes)");
      }
    } catch (ConfigException e) {
      err.println("kvroute serve: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.USAGE;
    }
    java.time.Duration warmUpLimit;
    try {
      warmUpLimit = dev.kvroute.proxy.config.Durations.parse(warmUpMax);
      if (warmUpRequests < 0 || warmUpLimit.isZero() || warmUpLimit.isNegative()) {
        throw new ConfigException("--warm-up-requests " + warmUpRequests + " --warm-up-max " + warmUpMax
            + " (expected: N >= 0 and a positive duration)");
      }
    } catch (IllegalArgumentException | ConfigException e) {
      err.println("kvroute serve: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.USAGE;
    }
    // before the real port opens: /ready answers only once the hot path is compiled
    dev.kvroute.proxy.SelfWarmUp.Result warmed = dev.kvroute.proxy.SelfWarmUp.run(cfg, warmUpRequests, warmUpLimit);
    if (warmUpOnly) {
      out.println("warm-up: " + warmed.requests() + " requests (" + warmed.failed() + " failed) in "
          + warmed.elapsed().toMillis() + " ms");
      out.flush();
      return 0;
    }
    Serving serving;
    try {
      serving = Serving.start(cfg, core);
    } catch (ConfigException e) {
      err.println("kvroute serve: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.USAGE;
    } catch (IllegalStateException e) {
      err.println("kvroute serve: " + e.getMessage());
      err.flush();
      return CommandLine.ExitCode.SOFTWARE;
    }
    KvrouteServer server = serving.server();
    ProxyConfig running = server.config();
    CountDownLatch stopped = new CountDownLatch(1);
    Thread hook = new Thread(() -> {
      // written to the command's stream in the log's format, not through the logger: the JDK's own
      // shutdown hook may close the logging handlers while this one runs
      long t0 = System.nanoTime();
      shutdownLine(err, "shutting down; draining requests in progress (up to "
          + running.timeouts().drain().toMillis() + " ms)");
      try {
        boolean drained = server.drain(running.timeouts().drain());
        shutdownLine(err, drained
            ? "drained in " + (System.nanoTime() - t0) / 1_000_000 + " ms"
            : "drain limit reached; aborting the requests still in progress");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        serving.close();
        shutdownLine(err, "stopped");
        stopped.countDown();
      }
    }, "kvroute-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    // the start line, once
    LOG.log(System.Logger.Level.INFO, "kvroute listening on " + running.bind() + ":" + server.port() + " ("
        + server.transportName() + "): OpenAI base URL " + server.uri() + "/v1, policy " + running.policy().name()
        + ", index " + running.index().mode() + " in " + running.routing().pageSizeTokens() + "-token pages"
        + ", backends " + server.backends()
        + (serving.mocks() == null ? "" : " (bundled mock engines)")
        + (server.adminUri() == null ? "" : ", admin API on " + server.adminUri()));
    stopped.await();
    return 0;
  }

  private static void shutdownLine(PrintWriter err, String message) {
    err.print(Logging.line(Level.INFO, ServeCommand.class.getName(), message));
    err.flush();
  }

  /**
   * What {@code serve} runs: the proxy and, for {@code --mock-backends N} with no backend configured,
   * the bundled fleet it routes to (started first; the proxy gets their URLs as its backends).
   *
   * @param server the running proxy
   * @param mocks the bundled engines, or {@code null} when the backends are configured
   */
  record Serving(KvrouteServer server, MockBackends mocks) implements AutoCloseable {

    /**
     * Starts the bundled engines (if asked) and then the proxy.
     *
     * @throws ConfigException as {@link KvrouteServer#start(ProxyConfig, RouterCore)}
     * @throws IllegalStateException if a port cannot be bound; nothing is left running
     */
    static Serving start(ProxyConfig cfg, RouterCore core) {
      MockBackends mocks = null;
      try {
        if (cfg.backends().isEmpty() && cfg.mockBackends() > 0) {
          // the bundled engines cannot tokenize by asking an engine: they use the fallback's encoding
          String engineTokenizer = cfg.routing().tokenizer().strip().equalsIgnoreCase("engine")
              ? dev.kvroute.core.tokenize.Tokenizer.DEFAULT_ENCODING : cfg.routing().tokenizer();
          mocks = MockBackends.start(cfg.mockBackends(), engineTokenizer);
          cfg = cfg.withMockBackends(0).withBackendUrls(mocks.urls());
        }
        return new Serving(KvrouteServer.start(cfg, core), mocks);
      } catch (RuntimeException e) {
        if (mocks != null) {
          mocks.close();
        }
        throw e;
      }
    }

    /** Stops the proxy (aborting what is in flight), then the bundled engines. */
    @Override
    public void close() {
      server.close();
      if (mocks != null) {
        mocks.close();
      }
    }
  }
}
