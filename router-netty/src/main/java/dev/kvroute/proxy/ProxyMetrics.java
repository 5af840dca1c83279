package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.policy.Rule;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's Micrometer meters, exported in Prometheus text format at {@code GET /metrics}.
 * {@code docs/operations.md} explains each one. Names are lowercase with dots ({@code kvroute.*});
 * Prometheus shows them with underscores and unit suffixes ({@code kvroute_requests_total},
 * {@code kvroute_request_duration_seconds}). Tags have bounded values only: backend ids (from
 * configuration or the admin API), the policy name, and the fixed sets of endpoint kinds, outcomes,
 * rules and error kinds; never a session, prompt, path or client-supplied model.
 *
 * <p>Thread-safe.
 */
final class ProxyMetrics implements AutoCloseable {
  /** Request and end-to-end buckets, as vLLM's {@code vllm:e2e_request_latency_seconds} (seconds). */
  private static final double[] DURATION_BUCKETS_SECONDS = {
    0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920
  };

  /** TTFT buckets, as vLLM's {@code vllm:time_to_first_token_seconds} (seconds). */
  private static final double[] TTFT_BUCKETS_SECONDS = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10, 20, 40, 80, 160, 640
  };

  /** Routing decision time buckets (seconds): 10 µs to 50 ms. */
  private static final double[] DECISION_BUCKETS_SECONDS = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05
  };

  /** Token-count buckets (1-2-5 series up to 1M tokens). */
  private static final double[] TOKEN_BUCKETS = {
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000
  };

  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final String policy;
  private final Map<BackendId, List<Meter>> backendMeters = new ConcurrentHashMap<>();
  private final JvmGcMetrics gc = new JvmGcMetrics();
  /**
   * Every meter a request updates, by its name and tag values, built and registered on first use:
   * a request then costs one map lookup per meter instead of a builder, a sorted tag set and the
   * registry's id lookup (about a dozen per request). Meters with these names are never removed from
   * the registry (only the per-backend gauges are), so a cached meter stays the registered one.
   */
  private final ConcurrentHashMap<MeterKey, Meter> meters = new ConcurrentHashMap<>();

  /**
   * A meter's name and up to three tag values ({@code null} when unused). Equality and hash written
   * out rather than the record's own (which go through {@code ObjectMethods}' method handles, 0.8%
   * of the proxy's CPU per request in JFR): the names and tag values a request passes are mostly
   * the same instances each time (constants, a backend's name, enum constants), so {@code ==}
   * decides first.
   */
  private record MeterKey(String name, Object a, Object b, Object c) {
    @Override
    public int hashCode() {
      return ((name.hashCode() * 31 + hash(a)) * 31 + hash(b)) * 31 + hash(c);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof MeterKey k && same(name, k.name) && same(a, k.a) && same(b, k.b) && same(c, k.c);
    }

    private static int hash(Object x) {
      return x == null ? 0 : x.hashCode();
    }

    private static boolean same(Object x, Object y) {
      return x == y || (x != null && x.equals(y));
    }
  }

  @SuppressWarnings("unchecked")
  private <M extends Meter> M meter(String name, Object a, Object b, Object c,
      java.util.function.Supplier<M> register) {
    MeterKey key = new MeterKey(name, a, b, c);
    Meter m = meters.get(key);
    if (m == null) {
      m = meters.computeIfAbsent(key, k -> register.get());
    }
    return (M) m;
  }

  ProxyMetrics(String policy) {
    this.policy = policy;
  }

  private volatile java.util.function.Function<String, String> indexMode = b -> "approximate";

  PrometheusMeterRegistry registry() {
    return registry;
  }

  /** The Prometheus text exposition of every meter. */
  String scrape() {
    return registry.scrape();
  }

  /** One request ended: {@code kvroute.requests} and {@code kvroute.request.duration}. */
  void request(String backend, String endpoint, Outcome outcome, long durationNanos) {
    this.<Counter>meter("kvroute.requests", backend, endpoint, outcome, () -> Counter.builder("kvroute.requests")
        .description("Requests by backend, policy, endpoint and outcome")
        .tags("backend", backend, "policy", policy, "endpoint", endpoint, "outcome", outcome.tag())
        .register(registry))
        .increment();
    if (outcome != Outcome.REJECTED) {
      this.<Timer>meter("kvroute.request.duration", endpoint, outcome, null, () -> Timer.builder("kvroute.request.duration")
          .description("Time from the request read to the response's last byte written (or failure)")
          .tags("policy", policy, "endpoint", endpoint, "outcome", outcome.tag())
          .serviceLevelObjectives(durations(DURATION_BUCKETS_SECONDS))
          .register(registry))
          .record(durationNanos, TimeUnit.NANOSECONDS);
    }
  }

  /** A stream that broke off after its head was sent was ended with an SSE error event and {@code [DONE]}. */
  void streamErrorEvent() {
    Counter.builder("kvroute.stream.error.events")
        .description("Streams the router ended with an SSE error event and [DONE] after the backend broke off")
        .register(registry)
        .increment();
  }

  /**
   * One generation request ended, by model: {@code kvroute.model.requests}, and for a served one the
   * engine-reported prompt and cached tokens ({@code kvroute.model.prompt.tokens},
   * {@code kvroute.model.cached.tokens}: their ratio is the model's hit rate). {@code model} is a
   * bounded label: a configured or discovered name, {@code other} (a name no backend lists) or
   * {@code none} (no model in the request); see {@code ModelCatalog.Resolved#label}.
   *
   * @param cachedTokens engine-reported cached tokens, or {@code -1} when not reported
   */
  void modelRequest(String model, Outcome outcome, long promptTokens, long cachedTokens) {
    this.<Counter>meter("kvroute.model.requests", model, outcome, null, () -> Counter.builder("kvroute.model.requests")
        .description("Generation requests by model (base or LoRA adapter) and outcome")
        .tags("model", model, "outcome", outcome.tag())
        .register(registry))
        .increment();
    if (cachedTokens >= 0) {
      this.<Counter>meter("kvroute.model.prompt.tokens", model, null, null, () -> Counter.builder("kvroute.model.prompt.tokens")
          .description("Engine-reported prompt tokens of requests whose cached tokens were reported, by model")
          .tags("model", model)
          .register(registry))
          .increment(promptTokens);
      this.<Counter>meter("kvroute.model.cached.tokens", model, null, null, () -> Counter.builder("kvroute.model.cached.tokens")
          .description("Engine-reported cached prompt tokens, by model")
          .tags("model", model)
          .register(registry))
          .increment(cachedTokens);
    }
  }

  /** Router-observed time to first token by model (a bounded label, as {@link #modelRequest}). */
  void modelTtft(String model, long nanos) {
    this.<Timer>meter("kvroute.model.ttft", model, null, null, () -> Timer.builder("kvroute.model.ttft")
        .description("Router-observed time to first token by model (base or LoRA adapter)")
        .tags("model", model)
        .serviceLevelObjectives(durations(TTFT_BUCKETS_SECONDS))
        .register(registry))
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  /** A request refused by the router before routing (limits, malformed HTTP). */
  void rejected(String endpoint) {
    request("none", endpoint, Outcome.REJECTED, 0);
  }

  /** Router-observed time to first token: request read to first response body byte. */
  void ttft(String backend, String endpoint, long nanos) {
    this.<Timer>meter("kvroute.ttft", backend, endpoint, null, () -> Timer.builder("kvroute.ttft")
        .description("Router-observed time to first token: request read to first response body byte from the backend")
        .tags("backend", backend, "endpoint", endpoint)
        .serviceLevelObjectives(durations(TTFT_BUCKETS_SECONDS))
        .register(registry))
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  /** One routing decision and the rule that made it. */
  void decision(Rule rule, long decisionNanos) {
    this.<Counter>meter("kvroute.routing.decisions", rule, null, null, () -> Counter.builder("kvroute.routing.decisions")
        .description("Routing decisions by policy and the rule that fired")
        .tags("policy", policy, "rule", rule.name().toLowerCase(java.util.Locale.ROOT))
        .register(registry))
        .increment();
    this.<Timer>meter("kvroute.routing.decision.duration", null, null, null, () -> Timer.builder("kvroute.routing.decision.duration")
        .description("Time to route one request: tokenize, match the prefix index, apply the policy")
        .tags("policy", policy)
        .serviceLevelObjectives(durations(DECISION_BUCKETS_SECONDS))
        .register(registry))
        .record(decisionNanos, TimeUnit.NANOSECONDS);
  }

  /** The index's prediction for a routed request: prompt tokens and matched (predicted cached) tokens. */
  void predicted(String backend, int promptTokens, int predictedCachedTokens) {
    tokens("kvroute.prompt.tokens", "Prompt tokens of routed requests as the router tokenizes them", backend)
        .record(promptTokens);
    tokens("kvroute.prefix.predicted.tokens", "Prompt tokens the prefix index predicted the chosen backend had cached", backend)
        .record(predictedCachedTokens);
  }

  /**
   * As {@link #predicted(String, int, int)} for what {@code routed} computed: nothing when its policy
   * read nothing of the prompt (not tokenized), the prompt tokens alone when it read no prefix match
   * (no prediction to record).
   */
  void predicted(String backend, RouterCore.Routed routed) {
    switch (routed.reads()) {
      case NONE -> { }
      case TOKENS -> tokens("kvroute.prompt.tokens", "Prompt tokens of routed requests as the router tokenizes them",
          backend).record(routed.promptLength());
      default -> predicted(backend, routed.promptLength(), routed.predictedCachedTokens());
    }
  }

  /**
   * The predicted cached tokens {@link #reported} compares the engine's report with: {@code routed}'s,
   * or {@code -1} (no prediction) when nothing was routed or its policy read no prefix match.
   */
  static long prediction(RouterCore.Routed routed) {
    return routed == null || routed.reads() != dev.kvroute.core.policy.PromptReads.PREFIX_MATCH
        ? -1 : routed.predictedCachedTokens();
  }

  /**
   * The engine's own usage report for a finished request, and how far the prediction was from it.
   * The error is counted at the index's resolution: the prefix index credits a backend in whole pages
   * of {@code pageSizeTokens}, so the report is compared in whole pages too ({@code cachedTokens}
   * rounded down to a page), and the tokens of a cached block that fill no whole page are not counted
   * as an error. With the page equal to the engine's block (vLLM reports whole blocks) nothing is
   * rounded; with 64-token pages in front of 16-token blocks (the approximate mode's default) up to 48
   * tokens are. The predicted and reported series ({@code kvroute_index_cached_tokens}) keep the raw
   * counts.
   *
   * @param cachedTokens engine-reported cached prompt tokens, or {@code -1} when not reported
   * @param predictedCachedTokens the index's prediction for the request ({@link #prediction}), or
   *     {@code -1} when there was none: the prediction series are then left alone
   * @param pageSizeTokens the prefix index's page, {@code > 0}
   */
  void reported(String backend, long promptTokens, long cachedTokens, long predictedCachedTokens, int pageSizeTokens) {
    tokens("kvroute.engine.prompt.tokens", "Prompt tokens as reported by the engine (usage.prompt_tokens)", backend)
        .record(promptTokens);
    if (cachedTokens < 0) {
      usageReport("no_cached_tokens");
      return;
    }
    usageReport("cached_tokens");
    tokens("kvroute.engine.cached.tokens", "Cached prompt tokens as reported by the engine (prompt_tokens_details.cached_tokens)", backend)
        .record(cachedTokens);
    if (predictedCachedTokens < 0) {
      return; // no prediction (a policy that reads no prefix match): nothing to compare
    }
    String mode = indexMode.apply(backend);
    cachedByMode(mode, "predicted").record(predictedCachedTokens);
    cachedByMode(mode, "reported").record(cachedTokens);
    long error = predictedCachedTokens - cachedTokens / pageSizeTokens * pageSizeTokens;
    String direction = error > 0 ? "over" : error < 0 ? "under" : "exact";
    this.<DistributionSummary>meter("kvroute.prefix.prediction.error", backend, direction, null,
        () -> DistributionSummary.builder("kvroute.prefix.prediction.error")
            .description("Absolute difference between predicted and engine-reported cached tokens, by direction")
            .baseUnit("tokens")
            .tags("backend", backend, "direction", direction)
            .serviceLevelObjectives(TOKEN_BUCKETS)
            .register(registry))
        .record(Math.abs(error));
  }

  /**
   * Sets how {@link #reported} learns the index mode of a backend ({@code "precise"} or
   * {@code "approximate"}); every backend is approximate until then.
   */
  void indexModes(java.util.function.Function<String, String> modeOfBackend) {
    this.indexMode = modeOfBackend;
  }

  private DistributionSummary cachedByMode(String mode, String source) {
    return meter("kvroute.index.cached.tokens", mode, source, null, () -> DistributionSummary.builder("kvroute.index.cached.tokens")
        .description("Cached prompt tokens of finished requests, as the index predicted them and as the engine "
            + "reported them, by the chosen backend's index mode")
        .baseUnit("tokens")
        .tags("mode", mode, "source", source)
        .register(registry));
  }

  /**
   * A served request's reported cached tokens were fewer whole pages than the approximate index
   * predicted for its backend ({@link dev.kvroute.core.index.UsageCorrection}), and corrected its
   * view.
   */
  void usageCorrection(String backend) {
    Counter.builder("kvroute.index.usage.corrections")
        .description("Responses whose reported cached_tokens fell short of the index's prediction and corrected the backend's approximate view")
        .tags("backend", backend)
        .register(registry)
        .increment();
  }

  /**
   * A prompt with much new text was routed on what the router knew of it while the body workers were
   * busy, and encoded for the index after it was forwarded ({@code RouterCore#routeAhead}); each
   * attempt of a retried request counts.
   */
  void routedAhead() {
    Counter.builder("kvroute.routing.ahead.of.encoding")
        .description("Routings of prompts with much new text on their known leading tokens while the body workers were busy (a retry counts again), encoded for the index after forwarding")
        .tags("policy", policy)
        .register(registry)
        .increment();
  }

  /** A finished response carried no usage the router could read. */
  void usageMissing() {
    usageReport("missing");
  }

  /** A finished generation response whose usage no engine could have sent ({@code UsageScanner#plausible}): not recorded. */
  void usageImplausible() {
    usageReport("implausible");
  }

  private void usageReport(String result) {
    this.<Counter>meter("kvroute.usage.reports", result, null, null, () -> Counter.builder("kvroute.usage.reports")
        .description("Finished generation responses by what usage the router could read from them")
        .tags("result", result)
        .register(registry))
        .increment();
  }

  /** An upstream failure of {@code kind} (connect, connect_timeout, first_byte_timeout, ...). */
  void upstreamError(String backend, String kind) {
    Counter.builder("kvroute.upstream.errors")
        .description("Upstream failures by backend and kind")
        .tags("backend", backend, "kind", kind)
        .register(registry)
        .increment();
  }

  /** A retry on another backend (or, for {@code stale_connection}, on a fresh connection). */
  void retry(String reason) {
    Counter.builder("kvroute.retries")
        .description("Retries by reason")
        .tags("reason", reason)
        .register(registry)
        .increment();
  }

  /** An exception caught on a channel, by side ({@code client}, {@code upstream}, {@code admin}). */
  void channelException(String side) {
    Counter.builder("kvroute.channel.exceptions")
        .description("Exceptions caught on channels, by side")
        .tags("side", side)
        .register(registry)
        .increment();
  }

  // the two counters of poolAcquired once registered (every request takes a connection)
  private volatile Counter pooledConnections;
  private volatile Counter newConnections;

  /** Whether an upstream connection came from the pool or was opened. */
  void poolAcquired(boolean reused) {
    Counter c = reused ? pooledConnections : newConnections;
    if (c == null) {
      c = this.<Counter>meter("kvroute.upstream.connections", reused, null, null, () -> Counter.builder("kvroute.upstream.connections")
          .description("Upstream connections taken for requests, by source (pooled or new)")
          .tags("source", reused ? "pooled" : "new")
          .register(registry));
      if (reused) {
        pooledConnections = c;
      } else {
        newConnections = c;
      }
    }
    c.increment();
  }

  /** A circuit breaker changed state. */
  void circuitTransition(BackendId backend, CircuitBreaker.State to) {
    Counter.builder("kvroute.circuit.transitions")
        .description("Circuit-breaker state changes by backend and new state")
        .tags("backend", backend.name(), "state", to.name().toLowerCase(java.util.Locale.ROOT))
        .register(registry)
        .increment();
  }

  /** Registers the per-backend gauges of {@code backend}. */
  void addBackend(Backend backend, RouterCore core) {
    BackendId id = backend.id();
    Tags tags = Tags.of("backend", id.name());
    List<Meter> meters = new ArrayList<>();
    meters.add(Gauge.builder("kvroute.backend.inflight", core, c -> c.loads().load(id).inFlightRequests())
        .description("Requests routed to the backend and not yet finished")
        .baseUnit("requests").tags(tags).register(registry));
    meters.add(Gauge.builder("kvroute.backend.prefilling", core, c -> c.loads().load(id).prefillingRequests())
        .description("Requests routed to the backend and not yet past their first token")
        .baseUnit("requests").tags(tags).register(registry));
    meters.add(Gauge.builder("kvroute.backend.foreign", core, c -> c.loads().load(id).foreignRequests())
        .description("Requests the engine last reported running or waiting beyond this router's own "
            + "(other routers, direct clients); 0 unless engine load is scraped")
        .baseUnit("requests").tags(tags).register(registry));
    meters.add(Gauge.builder("kvroute.backend.engine.kv.usage", core, c -> c.loads().load(id).engineKvUsage())
        .description("KV cache usage 0..1 the engine last reported (vllm:kv_cache_usage_perc); -1 when unknown")
        .tags(tags).register(registry));
    meters.add(Gauge.builder("kvroute.backend.healthy", backend, b -> b.healthy() ? 1 : 0)
        .description("1 when the backend passes its active health checks")
        .tags(tags).register(registry));
    meters.add(Gauge.builder("kvroute.circuit.state", backend, b -> b.breaker().state().code())
        .description("Circuit-breaker state: 0 closed, 1 open, 2 half-open")
        .tags(tags).register(registry));
    meters.add(Gauge.builder("kvroute.index.size", core, c -> c.index().sizeTokens(id))
        .description("Tokens the prefix index attributes to the backend")
        .baseUnit("tokens").tags(tags).register(registry));
    meters.add(Gauge.builder("kvroute.backend.capacity", backend, Backend::capacityTokens)
        .description("KV capacity the prefix index allows the backend")
        .baseUnit("tokens").tags(tags).register(registry));
    List<Meter> previous = backendMeters.put(id, meters);
    if (previous != null) {
      previous.forEach(registry::remove);
    }
  }

  /** Removes the per-backend gauges of {@code backend}. */
  void removeBackend(BackendId backend) {
    List<Meter> meters = backendMeters.remove(backend);
    if (meters != null) {
      meters.forEach(registry::remove);
    }
  }

  /** Registers the gauges that do not depend on a backend. */
  void addGlobalGauges(RouterCore core, UpstreamPool pool) {
    // the JVM's own meters (jvm_memory_*, jvm_gc_* incl. jvm_gc_memory_allocated_bytes_total,
    // jvm_threads_*, process_cpu_*): heap sizing, GC pauses and allocation per request
    new JvmMemoryMetrics().bindTo(registry);
    gc.bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ClassLoaderMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    Gauge.builder("kvroute.index.memory", core, c -> c.index().estimatedBytes())
        .description("Estimated heap bytes held by the prefix index")
        .baseUnit("bytes").register(registry);
    if (pool != null) { // none in the endpoint picker, which forwards nothing itself
      Gauge.builder("kvroute.upstream.idle.connections", pool, UpstreamPool::idleCount)
          .description("Idle pooled upstream connections")
          .baseUnit("connections").register(registry);
    }
  }

  /** Unregisters the GC notification listeners; the registry itself needs no closing. */
  @Override
  public void close() {
    gc.close();
  }

  private DistributionSummary tokens(String name, String description, String backend) {
    return meter(name, backend, null, null, () -> DistributionSummary.builder(name)
        .description(description)
        .baseUnit("tokens")
        .tags("backend", backend)
        .serviceLevelObjectives(TOKEN_BUCKETS)
        .register(registry));
  }

  private static Duration[] durations(double[] seconds) {
    Duration[] d = new Duration[seconds.length];
    for (int i = 0; i < seconds.length; i++) {
      d[i] = Duration.ofNanos((long) (seconds[i] * 1e9));
    }
    return d;
  }
}
