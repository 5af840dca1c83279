package dev.kvroute.bench.report;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * The figures of every policy over one workload: the document {@code results.json} holds
 * ({@code {"workload","timeScale","policies":[...]}}).
 *
 * <p>Immutable and thread-safe.
 *
 * @param workload workload name, e.g. {@code seed}
 * @param timeScale the engines' time scale K (model time = wall time × K) of a real run, or
 *     {@code null} for the simulator, whose clock is virtual
 * @param policies one entry per policy, in the order they ran
 */
public record RunReport(String workload, Double timeScale, List<PolicyFigures> policies) {
  public RunReport {
    Objects.requireNonNull(workload, "workload");
    policies = List.copyOf(policies);
  }

  /** The figures of {@code policy}, if it ran. */
  public Optional<PolicyFigures> policy(String policy) {
    return policies.stream().filter(p -> p.policy().equals(policy)).findFirst();
  }
}
