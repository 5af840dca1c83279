package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * Active health checks: every {@code interval} the router sends {@code GET path} to each backend. A
 * backend becomes unhealthy after {@code unhealthyThreshold} consecutive failed probes (a non-2xx
 * answer, a connection failure, or no answer within {@code timeout}) and healthy again after
 * {@code healthyThreshold} consecutive good ones. Backends start healthy and are probed at once.
 *
 * <p>Every {@code engineLoadInterval} the router also scrapes each backend's {@code /metrics} for the
 * engine's own load gauges (vLLM's {@code vllm:num_requests_running/waiting} and
 * {@code vllm:kv_cache_usage_perc}, SGLang's {@code sglang:num_running_reqs/num_queue_reqs} and
 * {@code sglang:token_usage}), so that load this router did not send counts in its decisions (see
 * {@code LoadTracker.reportEngine}), and for {@code process_start_time_seconds}, so that an engine
 * restart is noticed within one scrape.
 *
 * <p>Immutable and thread-safe.
 *
 * @param enabled {@code false} keeps every backend healthy (the circuit breaker still applies)
 * @param path the probe path. Default {@code /health} (vLLM and SGLang)
 * @param interval time between probes of one backend. Default 5s
 * @param timeout a probe not answered within this fails (SGLang's router: 5s). Default 5s
 * @param unhealthyThreshold consecutive failures that mark a backend unhealthy. Default 3
 * @param healthyThreshold consecutive successes that mark it healthy again. Default 2
 * @param engineLoadInterval time between scrapes of one backend's {@code /metrics} for its load;
 *     {@code 0} turns them off, else at least 100ms (each scrape is a connection and a whole
 *     exposition; vLLM renders it in Python). Default 1s (SGLang's router notes advise about 1 s,
 *     not 30 s)
 */
public record HealthCheckConfig(
    boolean enabled,
    String path,
    Duration interval,
    Duration timeout,
    int unhealthyThreshold,
    int healthyThreshold,
    Duration engineLoadInterval) {
  /** The shortest {@code engineLoadInterval} other than 0. */
  public static final Duration MIN_ENGINE_LOAD_INTERVAL = Duration.ofMillis(100);

  public HealthCheckConfig {
    Checks.nonBlank("path", path);
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException("path: " + path + " (expected: a path starting with /)");
    }
    Checks.positive("interval", interval);
    Checks.positive("timeout", timeout);
    Checks.positive("unhealthyThreshold", unhealthyThreshold);
    Checks.positive("healthyThreshold", healthyThreshold);
    Checks.notNull("engineLoadInterval", engineLoadInterval, "a duration");
    if (!engineLoadInterval.isZero() && engineLoadInterval.compareTo(MIN_ENGINE_LOAD_INTERVAL) < 0) {
      throw new IllegalArgumentException("engineLoadInterval: " + Durations.format(engineLoadInterval)
          + " (expected: 0s = off, or >= " + Durations.format(MIN_ENGINE_LOAD_INTERVAL) + ")");
    }
  }

  /** Whether engine load is scraped ({@code engineLoadInterval > 0}). */
  public boolean engineLoadEnabled() {
    return !engineLoadInterval.isZero();
  }

  /**
   * {@code Retry-After} for a 503 "no healthy backend": the probe interval in whole seconds, at least
   * 1 (a probe may find a backend healthy within one interval).
   */
  public long retryAfterSeconds() {
    return Math.max(1, (interval.toMillis() + 999) / 1000);
  }

  public static HealthCheckConfig defaults() {
    return new HealthCheckConfig(true, "/health", Duration.ofSeconds(5), Duration.ofSeconds(5), 3, 2, Duration.ofSeconds(1));
  }
}
