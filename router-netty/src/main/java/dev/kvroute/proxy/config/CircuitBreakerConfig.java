package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * The per-backend circuit breaker. It counts connection failures, timeouts and 5xx answers, never
 * 4xx (a client's oversized prompt says nothing about the backend).
 *
 * <p>Closed → open after {@code failureThreshold} consecutive failures; open → half-open after
 * {@code openDuration}; half-open admits requests again and closes after {@code successThreshold}
 * consecutive successes, or reopens at the first failure. An open backend is not routed to.
 *
 * <p>Immutable and thread-safe.
 *
 * @param enabled {@code false} never opens the circuit
 * @param failureThreshold consecutive failures that open the circuit. Default 5
 * @param openDuration how long an open circuit stays open before a trial. Default 30s
 * @param successThreshold consecutive half-open successes that close it. Default 2
 * @param maxEjectionPercent the largest share of the backends whose circuits may be open at once, in
 *     percent of the backends registered; a circuit that would exceed it stays closed (one circuit may
 *     always open), as Envoy's outlier detection {@code max_ejection_percent}. Default 50
 */
public record CircuitBreakerConfig(
    boolean enabled, int failureThreshold, Duration openDuration, int successThreshold, int maxEjectionPercent) {
  public CircuitBreakerConfig {
    Checks.positive("failureThreshold", failureThreshold);
    Checks.positive("openDuration", openDuration);
    Checks.positive("successThreshold", successThreshold);
    Checks.range("maxEjectionPercent", maxEjectionPercent, 0, 100);
  }

  /** As the canonical constructor with {@code maxEjectionPercent} 50. */
  public CircuitBreakerConfig(boolean enabled, int failureThreshold, Duration openDuration, int successThreshold) {
    this(enabled, failureThreshold, openDuration, successThreshold, 50);
  }

  public static CircuitBreakerConfig defaults() {
    return new CircuitBreakerConfig(true, 5, Duration.ofSeconds(30), 2, 50);
  }
}
