package dev.kvroute.proxy.config;

import dev.kvroute.core.policy.PolicyConfig;
import java.net.URI;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The whole configuration of one kvroute proxy, as read from {@code kvroute.yaml} (see
 * {@code docs/configuration.md}) and overridden by {@code serve} flags. Every option has a YAML key
 * (the component names below, nested as shown) and a flag.
 *
 * <p>Build one in code from {@link #defaults()} with the {@code with...} methods, e.g. an in-process
 * router on an ephemeral port:
 *
 * <pre>{@code
 * ProxyConfig config = ProxyConfig.defaults()
 *     .withPort(0)
 *     .withAdminPort(0)
 *     .withPolicy("cache-aware")
 *     .withBackendUrls(List.of(URI.create("http://127.0.0.1:8001")));
 * }</pre>
 *
 * <p>Immutable and thread-safe.
 *
 * @param bind address the proxy listens on. Default {@code 0.0.0.0}
 * @param port proxy port; {@code 0} picks an ephemeral port. Default 8080
 * @param backends the replicas; may be empty only when {@code mockBackends > 0} or backends are to be
 *     added through the admin API
 * @param mockBackends when {@code backends} is empty, {@code kvroute serve} starts this many bundled
 *     mock engines in the same process and routes to them (the app's composition; {@link
 *     dev.kvroute.proxy.KvrouteServer} itself only routes to {@code backends}). Default 0
 * @param eventLoopThreads Netty event loop threads; {@code 0} means Netty's default (2 × cores)
 * @param policy the routing policy, its thresholds and its seed (router-core's record, bound as is)
 * @param routing request reading and prefix-index sizing
 * @param admin the admin API listener
 * @param timeouts upstream timeouts
 * @param limits client request limits
 * @param retries retries on another backend
 * @param circuitBreaker per-backend circuit breaker
 * @param healthCheck active health checks
 * @param pool upstream connection pools
 * @param writeBuffer channel write-buffer water marks (backpressure)
 * @param api which engine paths API clients may reach (the allow-list)
 * @param models model discovery, aliases and the context-length bound (see {@link ModelsConfig})
 * @param admission per-backend concurrency limits and the router's queue (overload)
 * @param index where the prefix index learns what engines cache: prediction, KV events, or both
 * @param discovery backends discovered from Kubernetes besides {@code backends} (see {@link DiscoveryConfig})
 */
public record ProxyConfig(
    String bind,
    int port,
    List<BackendConfig> backends,
    int mockBackends,
    int eventLoopThreads,
    PolicyConfig policy,
    RoutingConfig routing,
    AdminConfig admin,
    TimeoutConfig timeouts,
    LimitConfig limits,
    RetryConfig retries,
    CircuitBreakerConfig circuitBreaker,
    HealthCheckConfig healthCheck,
    PoolConfig pool,
    WriteBufferConfig writeBuffer,
    ApiConfig api,
    ModelsConfig models,
    AdmissionConfig admission,
    IndexConfig index,
    DiscoveryConfig discovery) {

  public ProxyConfig {
    Checks.nonBlank("bind", bind);
    Checks.port("port", port, false);
    backends = List.copyOf(Checks.notNull("backends", backends, "a list of backends"));
    Checks.range("mockBackends", mockBackends, 0, 256);
    Checks.range("eventLoopThreads", eventLoopThreads, 0, 1024);
    Checks.notNull("policy", policy, "a policy section");
    Checks.notNull("routing", routing, "a routing section");
    Checks.notNull("admin", admin, "an admin section");
    Checks.notNull("timeouts", timeouts, "a timeouts section");
    Checks.notNull("limits", limits, "a limits section");
    Checks.notNull("retries", retries, "a retries section");
    Checks.notNull("circuitBreaker", circuitBreaker, "a circuitBreaker section");
    Checks.notNull("healthCheck", healthCheck, "a healthCheck section");
    Checks.notNull("pool", pool, "a pool section");
    Checks.notNull("writeBuffer", writeBuffer, "a writeBuffer section");
    Checks.notNull("api", api, "an api section");
    Checks.notNull("models", models, "a models section");
    Checks.notNull("admission", admission, "an admission section");
    Checks.notNull("index", index, "an index section");
    discovery = discovery == null ? DiscoveryConfig.off() : discovery;
    Set<String> names = new HashSet<>();
    for (BackendConfig b : backends) {
      if (!names.add(b.name())) {
        throw new IllegalArgumentException("backends: duplicate name " + b.name() + " (expected: unique names)");
      }
    }
    if (!backends.isEmpty() && mockBackends > 0) {
      throw new IllegalArgumentException("mockBackends: " + mockBackends
          + " (expected: 0 when backends are given; mock engines replace backends, they do not add to them)");
    }
  }

  /** Every default: port 8080 on all interfaces, admin on 127.0.0.1:8081, cache-aware, no backends. */
  public static ProxyConfig defaults() {
    return new ProxyConfig(
        "0.0.0.0",
        8080,
        List.of(),
        0,
        0,
        PolicyConfig.defaults(),
        RoutingConfig.defaults(),
        AdminConfig.defaults(),
        TimeoutConfig.defaults(),
        LimitConfig.defaults(),
        RetryConfig.defaults(),
        CircuitBreakerConfig.defaults(),
        HealthCheckConfig.defaults(),
        PoolConfig.defaults(),
        WriteBufferConfig.defaults(),
        ApiConfig.defaults(),
        ModelsConfig.defaults(),
        AdmissionConfig.defaults(),
        IndexConfig.defaults(),
        DiscoveryConfig.off());
  }

  /** A copy listening on {@code bind} (an address). */
  public ProxyConfig withBind(String bind) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy listening on {@code port} ({@code 0}: ephemeral). */
  public ProxyConfig withPort(int port) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with the admin API on {@code port} ({@code 0}: ephemeral, {@code -1}: disabled). */
  public ProxyConfig withAdminPort(int port) {
    return withAdmin(admin.withPort(port));
  }

  /** A copy routing with policy {@code name}, other thresholds unchanged. */
  public ProxyConfig withPolicy(String name) {
    return withPolicy(policy.withName(name));
  }

  /** A copy with {@code policy}. */
  public ProxyConfig withPolicy(PolicyConfig policy) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with these backends (default names, capacity read from the engines). */
  public ProxyConfig withBackendUrls(List<URI> urls) {
    List<BackendConfig> list = new ArrayList<>();
    for (URI u : urls) {
      list.add(BackendConfig.of(Objects.requireNonNull(u, "url")));
    }
    return withBackends(list);
  }

  /** A copy with {@code backends}. */
  public ProxyConfig withBackends(List<BackendConfig> backends) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy that starts {@code n} bundled mock engines (requires no configured backends). */
  public ProxyConfig withMockBackends(int n) {
    return new ProxyConfig(bind, port, backends, n, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code routing}. */
  public ProxyConfig withRouting(RoutingConfig routing) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy fit to show: the admin token, if any, replaced by {@code REDACTED}. */
  public ProxyConfig withoutSecrets() {
    return admin.token() == null ? this : withAdmin(admin.withToken("REDACTED"));
  }

  /** A copy with {@code admin}. */
  public ProxyConfig withAdmin(AdminConfig admin) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code timeouts}. */
  public ProxyConfig withTimeouts(TimeoutConfig timeouts) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code limits}. */
  public ProxyConfig withLimits(LimitConfig limits) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code retries}. */
  public ProxyConfig withRetries(RetryConfig retries) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code circuitBreaker}. */
  public ProxyConfig withCircuitBreaker(CircuitBreakerConfig circuitBreaker) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code healthCheck}. */
  public ProxyConfig withHealthCheck(HealthCheckConfig healthCheck) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code pool}. */
  public ProxyConfig withPool(PoolConfig pool) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code writeBuffer}. */
  public ProxyConfig withWriteBuffer(WriteBufferConfig writeBuffer) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code models}. */
  public ProxyConfig withModels(ModelsConfig models) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code admission}. */
  public ProxyConfig withAdmission(AdmissionConfig admission) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code eventLoopThreads} ({@code 0}: Netty's default). */
  public ProxyConfig withEventLoopThreads(int eventLoopThreads) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code api} (the engine paths API clients may reach). */
  public ProxyConfig withApi(ApiConfig api) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy with {@code index}. */
  public ProxyConfig withIndex(IndexConfig index) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }

  /** A copy discovering backends as {@code discovery} says ({@link DiscoveryConfig#off()}: none). */
  public ProxyConfig withDiscovery(DiscoveryConfig discovery) {
    return new ProxyConfig(bind, port, backends, mockBackends, eventLoopThreads, policy, routing, admin,
        timeouts, limits, retries, circuitBreaker, healthCheck, pool, writeBuffer, api, models, admission, index, discovery);
  }
}
