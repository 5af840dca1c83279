package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * Active health checks: every {@code interval} the router sends {@code GET path} to each backend. A
 * backend becomes unhealthy after {@code unhealthyThreshold} consecutive failed probes (a non-2xx
 * answer, a connection failure, or no answer within {@code timeout}) and healthy again after
 * {@code healthyThreshold} consecutive good ones. Backends start healthy and are probed at once.
 *
 * <p>Immutable and thread-safe.
 *
 * @param enabled {@code false} keeps every backend healthy (the circuit breaker still applies)
 * @param path the probe path. Default {@code /health} (vLLM and SGLang)
 * @param interval time between probes of one backend. Default 5s
 * @param timeout a probe not answered within this fails (SGLang's router: 5s). Default 5s
 * @param unhealthyThreshold consecutive failures that mark a backend unhealthy. Default 3
 * @param healthyThreshold consecutive successes that mark it healthy again. Default 2
 */
public record HealthCheckConfig(
    boolean enabled,
    String path,
    Duration interval,
    Duration timeout,
    int unhealthyThreshold,
    int healthyThreshold) {
  public HealthCheckConfig {
    Checks.nonBlank("path", path);
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException("path: " + path + " (expected: a path starting with /)");
    }
    Checks.positive("interval", interval);
    Checks.positive("timeout", timeout);
    Checks.positive("unhealthyThreshold", unhealthyThreshold);
    Checks.positive("healthyThreshold", healthyThreshold);
  }

  public static HealthCheckConfig defaults() {
    return new HealthCheckConfig(true, "/health", Duration.ofSeconds(5), Duration.ofSeconds(5), 3, 2);
  }
}
