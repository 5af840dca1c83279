package dev.kvroute.engine.server;

import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.model.EngineStats;

/**
 * One mock engine's {@code /metrics}, in the Prometheus text format with vLLM's exact metric names,
 * labels ({@code model_name}, {@code engine}) and histogram buckets ({@code
 * vllm/v1/metrics/loggers.py}), written directly because Micrometer cannot produce names with colons.
 * Written as {@code prometheus_client}'s {@code generate_latest} writes them: counters with the
 * {@code _total} suffix on the samples and on their {@code HELP} and {@code TYPE} lines, histograms
 * with {@code _bucket}, {@code _count} and {@code _sum}, and labels sorted by name on every sample
 * ({@code engine}, {@code finished_reason}, {@code le}, {@code model_name}). Every time is in model
 * seconds.
 *
 * <p>Not thread-safe: updated and rendered on the engine's event loop.
 */
final class EngineMetrics {
  static final double[] TTFT_BUCKETS = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10, 20, 40,
    80, 160, 640, 2560
  };
  static final double[] ITL_BUCKETS = {
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10, 20, 40, 80
  };
  static final double[] REQUEST_BUCKETS = {
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680
  };

  /**
   * Clock-lag buckets (model seconds): how late the engine's timer fired against the model clock,
   * from well under a millisecond to seconds.
   */
  static final double[] CLOCK_LAG_BUCKETS = {
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10
  };

  /** Wall nanoseconds over which {@link #clockLagMaxSeconds} keeps the largest lag. */
  static final long LAG_WINDOW_NANOS = 10_000_000_000L;

  /** A cumulative histogram with fixed upper bounds. */
  static final class Histogram {
    final double[] bounds;
    final long[] counts;
    long count;
    double sum;

    Histogram(double[] bounds) {
      this.bounds = bounds;
      this.counts = new long[bounds.length];
    }

    void observe(double v) {
      count++;
      sum += v;
      for (int i = 0; i < bounds.length; i++) {
        if (v <= bounds[i]) {
          counts[i]++;
          return;
        }
      }
    }
  }

  final Histogram ttft = new Histogram(TTFT_BUCKETS);
  final Histogram itl = new Histogram(ITL_BUCKETS);
  final Histogram tpot = new Histogram(ITL_BUCKETS);
  final Histogram e2e = new Histogram(REQUEST_BUCKETS);
  final Histogram queue = new Histogram(REQUEST_BUCKETS);
  final Histogram prefill = new Histogram(REQUEST_BUCKETS);
  final Histogram decode = new Histogram(REQUEST_BUCKETS);
  final Histogram inference = new Histogram(REQUEST_BUCKETS);
  final Histogram clockLag = new Histogram(CLOCK_LAG_BUCKETS);
  private double lagMaxCurrent;
  private double lagMaxPrevious;
  private long lagWindowStart = Long.MIN_VALUE;
  long successStop;
  long successLength;
  long successAbort;

  private final String labels;
  /** {@code engine="0",}: the labels sorting before {@code finished_reason} and {@code le}. */
  private final String before;
  /** {@code ,model_name="..."}: the label sorting after them. */
  private final String after;
  private final String modelName;
  private final String engine;
  /** When this engine started, in seconds since the epoch: a restart changes it. */
  private final double startSeconds = System.currentTimeMillis() / 1000.0;

  EngineMetrics(String modelName, String engine) {
    this.modelName = modelName;
    this.engine = engine;
    this.before = "engine=" + label(engine) + ",";
    this.after = ",model_name=" + label(modelName);
    this.labels = "engine=" + label(engine) + after;
  }

  /**
   * Records one timer firing {@code lagModelSeconds} late against the model clock (wall lateness times
   * the time scale), at wall time {@code nowNanos}.
   */
  void clockLag(double lagModelSeconds, long nowNanos) {
    clockLag.observe(lagModelSeconds);
    roll(nowNanos);
    lagMaxCurrent = Math.max(lagMaxCurrent, lagModelSeconds);
  }

  /** The largest clock lag of the current and the previous 10-second window (model seconds). */
  double clockLagMaxSeconds(long nowNanos) {
    roll(nowNanos);
    return Math.max(lagMaxCurrent, lagMaxPrevious);
  }

  private void roll(long nowNanos) {
    if (lagWindowStart == Long.MIN_VALUE) {
      lagWindowStart = nowNanos;
      return;
    }
    long elapsed = nowNanos - lagWindowStart;
    if (elapsed >= LAG_WINDOW_NANOS) {
      lagMaxPrevious = elapsed >= 2 * LAG_WINDOW_NANOS ? 0 : lagMaxCurrent;
      lagMaxCurrent = 0;
      lagWindowStart = nowNanos;
    }
  }

  void finished(String reason) {
    switch (reason) {
      case "stop" -> successStop++;
      case "length" -> successLength++;
      default -> successAbort++;
    }
  }

  /** The exposition text, with gauges read from {@code stats}. */
  String render(EngineStats stats, EngineConfig config, double modelSeconds, double timeScale) {
    StringBuilder sb = new StringBuilder(16 * 1024);
    // prometheus_client's process collector, which vLLM's /metrics includes: routers tell a
    // restarted engine (an empty prefix cache) by this value changing
    sb.append("# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n");
    sb.append("# TYPE process_start_time_seconds gauge\n");
    sb.append("process_start_time_seconds ").append(num(startSeconds)).append('\n');
    gauge(sb, "vllm:num_requests_running", "Number of requests in model execution batches.", stats.running());
    gauge(sb, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", stats.waiting());
    gauge(sb, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", stats.kvUsage());
    gauge(sb, "vllm:gpu_cache_usage_perc",
        "GPU KV-cache usage. 1 means 100 percent usage. DEPRECATED: Use vllm:kv_cache_usage_perc.",
        stats.kvUsage());
    counter(sb, "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.", stats.prefixQueryTokens());
    counter(sb, "vllm:prefix_cache_hits",
        "Prefix cache hits, in terms of number of cached tokens.", stats.prefixHitTokens());
    counter(sb, "vllm:gpu_prefix_cache_queries",
        "GPU prefix cache queries. DEPRECATED: Use vllm:prefix_cache_queries.", stats.prefixQueryTokens());
    counter(sb, "vllm:gpu_prefix_cache_hits",
        "GPU prefix cache hits. DEPRECATED: Use vllm:prefix_cache_hits.", stats.prefixHitTokens());
    counter(sb, "vllm:num_preemptions", "Cumulative number of preemption from the engine.", stats.preemptions());
    counter(sb, "vllm:prompt_tokens", "Number of prefill tokens processed.", stats.promptTokens());
    counter(sb, "vllm:generation_tokens", "Number of generation tokens processed.", stats.generationTokens());

    sb.append("# HELP vllm:request_success_total Count of successfully processed requests.\n");
    sb.append("# TYPE vllm:request_success_total counter\n");
    success(sb, "stop", successStop);
    success(sb, "length", successLength);
    success(sb, "abort", successAbort);

    histogram(sb, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft);
    histogram(sb, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itl);
    histogram(sb, "vllm:request_time_per_output_token_seconds",
        "Histogram of time_per_output_token_seconds per request.", tpot);
    histogram(sb, "vllm:e2e_request_latency_seconds",
        "Histogram of e2e request latency in seconds.", e2e);
    histogram(sb, "vllm:request_queue_time_seconds",
        "Histogram of time spent in WAITING phase for request.", queue);
    histogram(sb, "vllm:request_prefill_time_seconds",
        "Histogram of time spent in PREFILL phase for request.", prefill);
    histogram(sb, "vllm:request_decode_time_seconds",
        "Histogram of time spent in DECODE phase for request.", decode);
    histogram(sb, "vllm:request_inference_time_seconds",
        "Histogram of time spent in RUNNING phase for request.", inference);

    sb.append("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n");
    sb.append("# TYPE vllm:cache_config_info gauge\n");
    sb.append("vllm:cache_config_info{block_size=\"").append(config.blockSizeTokens())
        .append("\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",engine=").append(label(engine))
        .append(",num_gpu_blocks=\"").append(config.numGpuBlocks())
        .append("\",prefix_caching_hash_algo=\"kvroute-chained-64\"} 1.0\n");

    String kv = "model_name=" + label(modelName);
    sb.append("# HELP kvroute_mock_model_time_seconds Model time since the engine started (wall time x time scale).\n");
    sb.append("# TYPE kvroute_mock_model_time_seconds gauge\n");
    sb.append("kvroute_mock_model_time_seconds{").append(kv).append("} ").append(num(modelSeconds)).append('\n');
    sb.append("# HELP kvroute_mock_time_scale Model seconds per wall-clock second.\n");
    sb.append("# TYPE kvroute_mock_time_scale gauge\n");
    sb.append("kvroute_mock_time_scale{").append(kv).append("} ").append(num(timeScale)).append('\n');
    sb.append("# HELP kvroute_mock_clock_lag_max_seconds Largest clock lag in the last 10 to 20 wall seconds"
        + " (model seconds).\n");
    sb.append("# TYPE kvroute_mock_clock_lag_max_seconds gauge\n");
    sb.append("kvroute_mock_clock_lag_max_seconds{").append(kv).append("} ").append(num(clockLagMaxSeconds(System.nanoTime())))
        .append('\n');
    histogram(sb, "kvroute_mock_clock_lag_seconds",
        "How late the engine's timer fired against its model clock, in model seconds (wall lateness x time"
            + " scale): events are reported at their model time but written this late.", clockLag);
    sb.append("# HELP kvroute_mock_prefill_busy_seconds_total Model seconds the engine spent computing prefill.\n");
    sb.append("# TYPE kvroute_mock_prefill_busy_seconds_total counter\n");
    sb.append("kvroute_mock_prefill_busy_seconds_total{").append(kv).append("} ")
        .append(num(stats.prefillNanos() / 1e9)).append('\n');
    sb.append("# HELP kvroute_mock_evicted_blocks_total Cached KV blocks evicted to make room.\n");
    sb.append("# TYPE kvroute_mock_evicted_blocks_total counter\n");
    sb.append("kvroute_mock_evicted_blocks_total{").append(kv).append("} ")
        .append(num(stats.evictedBlocks())).append('\n');
    sb.append("# HELP kvroute_mock_cached_blocks KV blocks holding a cached prefix (held or evictable).\n");
    sb.append("# TYPE kvroute_mock_cached_blocks gauge\n");
    sb.append("kvroute_mock_cached_blocks{").append(kv).append("} ")
        .append(num(stats.cachedBlocks())).append('\n');
    return sb.toString();
  }

  /** Requests answered 404 because they named a model this engine does not serve. */
  long modelNotFound;

  /**
   * The {@code vllm:lora_requests_info} series already rendered: labels to their value (the unix time
   * they were last the current state), oldest first. vLLM never drops one; the mock keeps the
   * {@value #LORA_SERIES_KEPT} most recent, so that a long-running engine's page stays small.
   */
  private final java.util.LinkedHashMap<String, Double> loraSeries = new java.util.LinkedHashMap<>(16, 0.75f, true);

  /** Past {@code vllm:lora_requests_info} series kept (see {@link #loraSeries}). */
  static final int LORA_SERIES_KEPT = 64;

  /**
   * vLLM's {@code vllm:lora_requests_info} gauge (labels {@code max_lora}, {@code running_lora_adapters},
   * {@code waiting_lora_adapters}: comma-separated adapter names; value: the unix time of the
   * sample, as vLLM's), and the mock's count of requests for a model it does not serve. As vLLM's
   * Prometheus logger sets the gauge on the series of the current labels and never removes the
   * others, every combination rendered before stays on the page with the time it was last current: the
   * current state is the series with the largest value (as GAIE's scraper reads it).
   *
   * <p>Thread-safe.
   */
  synchronized String renderLora(dev.kvroute.engine.model.LoraSlots slots, java.util.List<String> waiting) {
    String labels = "max_lora=\"" + slots.maxLoras() + "\",running_lora_adapters="
        + label(String.join(",", slots.running())) + ",waiting_lora_adapters=" + label(String.join(",", waiting));
    double now = System.currentTimeMillis() / 1000.0;
    for (double v : loraSeries.values()) {
      now = Math.max(now, Math.nextUp(v)); // the current series is the latest even within one millisecond
    }
    loraSeries.put(labels, now);
    if (loraSeries.size() > LORA_SERIES_KEPT) {
      loraSeries.remove(loraSeries.keySet().iterator().next());
    }
    StringBuilder sb = new StringBuilder(512);
    sb.append("# HELP vllm:lora_requests_info Running stats on lora requests.\n");
    sb.append("# TYPE vllm:lora_requests_info gauge\n");
    for (java.util.Map.Entry<String, Double> e : loraSeries.entrySet()) {
      sb.append("vllm:lora_requests_info{").append(e.getKey()).append("} ").append(num(e.getValue())).append('\n');
    }
    dev.kvroute.engine.model.LoraSlots.Stats ls = slots.stats();
    if (ls.requests() > 0) {
      // the mock's own account of its adapter slots (vLLM has none): a real run's loads and waits,
      // beside the simulator's (bench's multi-model report)
      mockCounter(sb, "kvroute_mock_lora_requests_total", "Requests run with a LoRA adapter.", ls.requests());
      mockCounter(sb, "kvroute_mock_lora_loads_total", "LoRA adapter loads into a slot.", ls.loads());
      mockCounter(sb, "kvroute_mock_lora_slot_waits_total",
          "Requests that waited for an adapter slot (every slot busy with other adapters).", ls.slotWaits());
      mockCounter(sb, "kvroute_mock_lora_slot_wait_seconds_total",
          "Model seconds those requests waited for a slot.", ls.slotWaitNanos() / 1e9);
      mockCounter(sb, "kvroute_mock_lora_load_waits_total",
          "Requests that waited for their adapter to load.", ls.loadWaits());
      mockCounter(sb, "kvroute_mock_lora_load_wait_seconds_total",
          "Model seconds those requests waited for their adapter's load.", ls.loadWaitNanos() / 1e9);
    }
    sb.append("# HELP kvroute_mock_model_not_found_total Requests answered 404 for a model not served.\n");
    sb.append("# TYPE kvroute_mock_model_not_found_total counter\n");
    sb.append("kvroute_mock_model_not_found_total{model_name=").append(label(modelName)).append("} ")
        .append(num(modelNotFound)).append('\n');
    return sb.toString();
  }

  private void mockCounter(StringBuilder sb, String name, String help, double v) {
    sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
    sb.append("# TYPE ").append(name).append(" counter\n");
    sb.append(name).append("{model_name=").append(label(modelName)).append("} ").append(num(v)).append('\n');
  }

  private void success(StringBuilder sb, String reason, long v) {
    sb.append("vllm:request_success_total{").append(before).append("finished_reason=\"")
        .append(reason).append('"').append(after).append("} ").append(num(v)).append('\n');
  }

  private void gauge(StringBuilder sb, String name, String help, double v) {
    sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
    sb.append("# TYPE ").append(name).append(" gauge\n");
    sb.append(name).append('{').append(labels).append("} ").append(num(v)).append('\n');
  }

  private void counter(StringBuilder sb, String name, String help, double v) {
    sb.append("# HELP ").append(name).append("_total ").append(help).append('\n');
    sb.append("# TYPE ").append(name).append("_total counter\n");
    sb.append(name).append("_total{").append(labels).append("} ").append(num(v)).append('\n');
  }

  private void histogram(StringBuilder sb, String name, String help, Histogram h) {
    sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
    sb.append("# TYPE ").append(name).append(" histogram\n");
    long cumulative = 0;
    for (int i = 0; i < h.bounds.length; i++) {
      cumulative += h.counts[i];
      sb.append(name).append("_bucket{").append(before).append("le=\"").append(num(h.bounds[i]))
          .append('"').append(after).append("} ").append(num(cumulative)).append('\n');
    }
    sb.append(name).append("_bucket{").append(before).append("le=\"+Inf\"").append(after).append("} ")
        .append(num(h.count)).append('\n');
    sb.append(name).append("_count{").append(labels).append("} ").append(num(h.count)).append('\n');
    sb.append(name).append("_sum{").append(labels).append("} ").append(num(h.sum)).append('\n');
  }

  /** A sample value as Python's prometheus_client prints it ({@code 3.0}, {@code 0.25}). */
  static String num(double v) {
    if (Double.isInfinite(v)) {
      return v > 0 ? "+Inf" : "-Inf";
    }
    if (v == Math.rint(v) && Math.abs(v) < 1e15) {
      return (long) v + ".0";
    }
    return Double.toString(v);
  }

  private static String label(String v) {
    return '"' + v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + '"';
  }
}
