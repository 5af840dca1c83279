package dev.kvroute.bench.load;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

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
 */
public record EngineMetrics(
    double prefillSeconds, double prefixCacheHits, double prefixCacheQueries, double ttftSeconds, double ttftCount) {
  public static final EngineMetrics ZERO = new EngineMetrics(0, 0, 0, 0, 0);

  /** This minus {@code earlier}: the counters' increase between two scrapes. */
  public EngineMetrics minus(EngineMetrics earlier) {
    return new EngineMetrics(
        prefillSeconds - earlier.prefillSeconds,
        prefixCacheHits - earlier.prefixCacheHits,
        prefixCacheQueries - earlier.prefixCacheQueries,
        ttftSeconds - earlier.ttftSeconds,
        ttftCount - earlier.ttftCount);
  }

  public EngineMetrics plus(EngineMetrics other) {
    return new EngineMetrics(
        prefillSeconds + other.prefillSeconds,
        prefixCacheHits + other.prefixCacheHits,
        prefixCacheQueries + other.prefixCacheQueries,
        ttftSeconds + other.ttftSeconds,
        ttftCount + other.ttftCount);
  }

  /** The engine's mean TTFT in seconds, 0 when no request was counted. */
  public double meanTtftSeconds() {
    return ttftCount > 0 ? ttftSeconds / ttftCount : 0;
  }

  /** Hits over queries, 0 when nothing was queried. */
  public double hitRate() {
    return prefixCacheQueries > 0 ? prefixCacheHits / prefixCacheQueries : 0;
  }

  /** Parses a Prometheus text exposition. Unknown lines are ignored. */
  public static EngineMetrics parse(String text) {
    double prefill = 0;
    double hits = 0;
    double queries = 0;
    double ttft = 0;
    double ttftCount = 0;
    for (String line : text.split("\n")) {
      if (line.isEmpty() || line.charAt(0) == '#') {
        continue;
      }
      int brace = line.indexOf('{');
      int space = line.indexOf(' ');
      if (space < 0) {
        continue;
      }
      String name;
      String rest;
      if (brace >= 0 && brace < space) {
        int close = line.lastIndexOf('}');
        if (close < 0) {
          continue;
        }
        name = line.substring(0, brace);
        rest = line.substring(close + 1).trim();
      } else {
        name = line.substring(0, space);
        rest = line.substring(space + 1).trim();
      }
      int end = rest.indexOf(' ');
      String valueText = end < 0 ? rest : rest.substring(0, end);
      double value;
      try {
        value = Double.parseDouble(valueText);
      } catch (NumberFormatException e) {
        continue;
      }
      switch (name) {
        case "vllm:request_prefill_time_seconds_sum" -> prefill += value;
        case "vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits" -> hits += value;
        case "vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries" -> queries += value;
        case "vllm:time_to_first_token_seconds_sum" -> ttft += value;
        case "vllm:time_to_first_token_seconds_count" -> ttftCount += value;
        default -> {}
      }
    }
    return new EngineMetrics(prefill, hits, queries, ttft, ttftCount);
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
