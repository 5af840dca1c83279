package dev.kvroute.proxy.config;

import java.time.Duration;
import java.util.Map;

/**
 * Admission control: how many requests each backend is given at once, and the router's queue for
 * the rest (see {@code docs/operations.md}, "Overload").
 *
 * <p>A backend is <em>saturated</em> when the requests this router has in flight on it plus the
 * foreign ones its engine reports reach its concurrency limit, or when its engine reports KV usage
 * at least {@code kvUsageThreshold} with requests waiting. The limit is {@code
 * maxConcurrencyPerBackend} when set; otherwise it is derived from the engine: the requests it
 * reported running the last time it also reported requests waiting (its batch was full: vLLM's
 * {@code max_num_seqs}, or fewer when KV-bound) plus {@code engineQueueDepth}; until the engine has
 * shown a full batch, {@code initialConcurrencyPerBackend}. When every candidate is saturated, a
 * generation request waits in the router's queue; the routing decision is made when it leaves.
 *
 * <p>Immutable and thread-safe.
 *
 * @param enabled {@code false}: no queue, no limit (requests go straight to the engines). Default on
 * @param maxConcurrencyPerBackend requests in flight per backend; {@code 0} derives it from the engine.
 *     Default 0
 * @param initialConcurrencyPerBackend the derived limit until the engine has shown a full batch.
 *     Default 256 (vLLM's default {@code max_num_seqs})
 * @param engineQueueDepth requests allowed to wait in an engine beyond its full batch, with a derived
 *     limit, so the engine can schedule the next one without a round trip. Default 4
 * @param kvUsageThreshold KV usage (0..1) at which an engine with requests waiting is saturated.
 *     Default 0.98
 * @param maxQueueLength requests waiting in the router at most; beyond, 429 (the worst is shed first).
 *     Default 1024
 * @param maxQueueBytes request body bytes waiting in the router at most; beyond, 429. Default 256 MiB
 * @param queueDeadline longest wait in the router's queue; then 429. Default 30s
 * @param tenant what identifies a tenant for fairness: {@code api-key} (a hash of the
 *     {@code Authorization} header), {@code user} (the body's {@code user} field), {@code header:NAME},
 *     or {@code none}. Default {@code api-key}
 * @param priorityHeader the header carrying a request's priority (an integer, lower is earlier),
 *     which the body's {@code priority} field overrides. Default {@code x-kvroute-priority}
 * @param tenantPriorities a tenant's default priority (when the request gives none), by tenant key as
 *     {@code tenant} reads it (for {@code api-key}: the key's hash as shown by the metrics, or the key
 *     itself). Default none
 * @param maxTenantLabels distinct tenants named in metrics; the rest count as {@code other}. Default 16
 */
public record AdmissionConfig(
    boolean enabled,
    int maxConcurrencyPerBackend,
    int initialConcurrencyPerBackend,
    int engineQueueDepth,
    double kvUsageThreshold,
    int maxQueueLength,
    long maxQueueBytes,
    Duration queueDeadline,
    String tenant,
    String priorityHeader,
    Map<String, Integer> tenantPriorities,
    int maxTenantLabels) {

  public AdmissionConfig {
    Checks.range("maxConcurrencyPerBackend", maxConcurrencyPerBackend, 0, 1 << 20);
    Checks.range("initialConcurrencyPerBackend", initialConcurrencyPerBackend, 1, 1 << 20);
    Checks.range("engineQueueDepth", engineQueueDepth, 0, 1 << 20);
    if (!(kvUsageThreshold > 0 && kvUsageThreshold <= 1)) {
      throw new IllegalArgumentException("kvUsageThreshold: " + kvUsageThreshold + " (expected: > 0 and <= 1)");
    }
    Checks.range("maxQueueLength", maxQueueLength, 0, 1 << 20);
    Checks.nonNegative("maxQueueBytes", maxQueueBytes);
    Checks.positive("queueDeadline", queueDeadline);
    Checks.nonBlank("tenant", tenant);
    if (!(tenant.equals("api-key") || tenant.equals("user") || tenant.equals("none")
        || (tenant.startsWith("header:") && tenant.length() > 7))) {
      throw new IllegalArgumentException("tenant: " + tenant + " (expected: api-key, user, header:NAME or none)");
    }
    Checks.nonBlank("priorityHeader", priorityHeader);
    tenantPriorities = Map.copyOf(tenantPriorities == null ? Map.of() : tenantPriorities);
    Checks.range("maxTenantLabels", maxTenantLabels, 0, 1000);
  }

  /** On; limits derived from the engines (256 until known, + 4 queued); 1024 requests, 256 MiB, 30 s. */
  public static AdmissionConfig defaults() {
    return new AdmissionConfig(true, 0, 256, 4, 0.98, 1024, 256L << 20, Duration.ofSeconds(30), "api-key",
        "x-kvroute-priority", Map.of(), 16);
  }

  /** A copy with a fixed per-backend limit ({@code 0}: derived). */
  public AdmissionConfig withMaxConcurrencyPerBackend(int n) {
    return new AdmissionConfig(enabled, n, initialConcurrencyPerBackend, engineQueueDepth, kvUsageThreshold,
        maxQueueLength, maxQueueBytes, queueDeadline, tenant, priorityHeader, tenantPriorities, maxTenantLabels);
  }

  /** A copy with these queue bounds. */
  public AdmissionConfig withQueue(int length, long bytes, Duration deadline) {
    return new AdmissionConfig(enabled, maxConcurrencyPerBackend, initialConcurrencyPerBackend, engineQueueDepth,
        kvUsageThreshold, length, bytes, deadline, tenant, priorityHeader, tenantPriorities, maxTenantLabels);
  }

  /** A copy reading tenants as {@code tenant} says, with these default priorities. */
  public AdmissionConfig withTenants(String tenant, Map<String, Integer> priorities) {
    return new AdmissionConfig(enabled, maxConcurrencyPerBackend, initialConcurrencyPerBackend, engineQueueDepth,
        kvUsageThreshold, maxQueueLength, maxQueueBytes, queueDeadline, tenant, priorityHeader, priorities,
        maxTenantLabels);
  }

  /** A copy switched on or off. */
  public AdmissionConfig withEnabled(boolean on) {
    return new AdmissionConfig(on, maxConcurrencyPerBackend, initialConcurrencyPerBackend, engineQueueDepth,
        kvUsageThreshold, maxQueueLength, maxQueueBytes, queueDeadline, tenant, priorityHeader, tenantPriorities,
        maxTenantLabels);
  }
}
