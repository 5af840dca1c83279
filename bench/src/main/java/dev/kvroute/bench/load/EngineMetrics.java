package dev.kvroute.bench.load;

import dev.kvroute.core.exposition.PrometheusText;
import dev.kvroute.core.exposition.Sample;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Set;
import java.util.TreeMap;

/**
 * The engine counters the bench reads from a vLLM-compatible {@code /metrics} page (Prometheus text
 * format), summed over label sets: the prefill seconds histogram's sum and the prefix cache counters.
 * Counter names are accepted with and without the {@code _total} suffix, as inference-perf does.
 *
 * <p>Immutable and thread-safe.
 *
 * @param prefillSeconds {@code vllm:request_prefill_time_seconds_sum}: model seconds from scheduled to
 *     first token, summed over requests
 * @param prefixCacheHits {@code vllm:prefix_cache_hits_total}: prompt tokens found in the prefix cache
 * @param prefixCacheQueries {@code vllm:prefix_cache_queries_total}: prompt tokens looked up
 * @param ttftSeconds {@code vllm:time_to_first_token_seconds_sum}: the engine's own TTFT (arrival at
 *     the engine to first token), summed over requests
 * @param ttftCount {@code vllm:time_to_first_token_seconds_count}: requests counted in it
 * @param timeScale the mock engine's {@code kvroute_mock_time_scale} (model seconds per wall second), or
 *     NaN when the engine does not export it (a real engine runs at 1)
 * @param clockLag the mock engine's {@code kvroute_mock_clock_lag_seconds} histogram ({@link
 *     ClockLag#NONE} for a real engine)
 * @param kvCapacityTokens KV cache capacity from {@code vllm:cache_config_info} ({@code num_gpu_blocks}
 *     x {@code block_size}), 0 when not exported
 */
public record EngineMetrics(
    double prefillSeconds,
    double prefixCacheHits,
    double prefixCacheQueries,
    double ttftSeconds,
    double ttftCount,
    double timeScale,
    ClockLag clockLag,
    long kvCapacityTokens) {
  public static final EngineMetrics ZERO = new EngineMetrics(0, 0, 0, 0, 0, Double.NaN, ClockLag.NONE, 0);

  /** The figures of the bench's first version, without a time scale or clock lag. */
  public EngineMetrics(
      double prefillSeconds, double prefixCacheHits, double prefixCacheQueries, double ttftSeconds, double ttftCount) {
    this(prefillSeconds, prefixCacheHits, prefixCacheQueries, ttftSeconds, ttftCount, Double.NaN, ClockLag.NONE, 0);
  }

  /** This minus {@code earlier}: the counters' increase between two scrapes. */
  public EngineMetrics minus(EngineMetrics earlier) {
    return new EngineMetrics(
        prefillSeconds - earlier.prefillSeconds,
        prefixCacheHits - earlier.prefixCacheHits,
        prefixCacheQueries - earlier.prefixCacheQueries,
        ttftSeconds - earlier.ttftSeconds,
        ttftCount - earlier.ttftCount,
        timeScale,
        clockLag.minus(earlier.clockLag),
        kvCapacityTokens);
  }

  public EngineMetrics plus(EngineMetrics other) {
    return new EngineMetrics(
        prefillSeconds + other.prefillSeconds,
        prefixCacheHits + other.prefixCacheHits,
        prefixCacheQueries + other.prefixCacheQueries,
        ttftSeconds + other.ttftSeconds,
        ttftCount + other.ttftCount,
        Double.isNaN(timeScale) ? other.timeScale : timeScale,
        clockLag.plus(other.clockLag),
        kvCapacityTokens + other.kvCapacityTokens);
  }

  /** The engine's mean TTFT in seconds, 0 when no request was counted. */
  public double meanTtftSeconds() {
    return ttftCount > 0 ? ttftSeconds / ttftCount : 0;
  }

  /** Hits over queries, 0 when nothing was queried. */
  public double hitRate() {
    return prefixCacheQueries > 0 ? prefixCacheHits / prefixCacheQueries : 0;
  }

  /** The metric names {@link #parse} reads. */
  private static final Set<String> NAMES = Set.of(
      "vllm:request_prefill_time_seconds_sum",
      "vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits",
      "vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries",
      "vllm:time_to_first_token_seconds_sum",
      "vllm:time_to_first_token_seconds_count",
      "kvroute_mock_time_scale",
      "kvroute_mock_clock_lag_seconds_bucket",
      "vllm:cache_config_info");

  /**
   * Parses a Prometheus text exposition ({@link PrometheusText}). Unknown metrics and malformed lines
   * are ignored.
   */
  public static EngineMetrics parse(String text) {
    double prefill = 0;
    double hits = 0;
    double queries = 0;
    double ttft = 0;
    double ttftCount = 0;
    double timeScale = Double.NaN;
    TreeMap<Double, Double> lag = new TreeMap<>();
    long capacity = 0;
    for (Sample s : PrometheusText.samples(text, NAMES::contains)) {
      double value = s.value();
      switch (s.name()) {
        case "vllm:request_prefill_time_seconds_sum" -> prefill += value;
        case "vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits" -> hits += value;
        case "vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries" -> queries += value;
        case "vllm:time_to_first_token_seconds_sum" -> ttft += value;
        case "vllm:time_to_first_token_seconds_count" -> ttftCount += value;
        case "kvroute_mock_time_scale" -> timeScale = value;
        case "kvroute_mock_clock_lag_seconds_bucket" -> {
          try {
            if (s.label("le") != null) {
              ClockLag.add(lag, s.label("le"), value);
            }
          } catch (NumberFormatException e) {
            // a bucket without a readable bound is malformed: skipped like any malformed line
          }
        }
        case "vllm:cache_config_info" -> capacity += capacityTokens(s);
        default -> {}
      }
    }
    return new EngineMetrics(prefill, hits, queries, ttft, ttftCount, timeScale, new ClockLag(lag), capacity);
  }

  /** {@code num_gpu_blocks x block_size} of a {@code vllm:cache_config_info} sample, 0 if unreadable. */
  private static long capacityTokens(Sample info) {
    try {
      String blocks = info.label("num_gpu_blocks");
      String size = info.label("block_size");
      return blocks == null || size == null ? 0 : Long.parseLong(blocks) * Long.parseLong(size);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * Scrapes {@code GET engine/metrics}.
   *
   * @throws IOException on a connection error or a status other than 200
   */
  public static EngineMetrics scrape(HttpClient http, URI engine) throws IOException, InterruptedException {
    URI uri = engine.resolve("/metrics");
    HttpResponse<String> res =
        http.send(
            HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).GET().build(),
            HttpResponse.BodyHandlers.ofString());
    if (res.statusCode() != 200) {
      throw new IOException("GET " + uri + ": HTTP " + res.statusCode());
    }
    return parse(res.body());
  }
}
