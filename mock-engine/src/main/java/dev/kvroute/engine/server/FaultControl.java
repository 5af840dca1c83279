package dev.kvroute.engine.server;

import java.util.Objects;

/**
 * The faults one mock engine injects now, changeable while it runs: from code ({@link
 * MockEngineServer#faults()}) or over HTTP ({@code PUT /mock/faults} with {@code {"requests":
 * "status:500", "probability": 0.5, "health": "fail"}}; {@code GET /mock/faults} shows them).
 *
 * <p>Thread-safe: each setting is a volatile field.
 */
public final class FaultControl {
  private volatile FaultPlan requests;
  private volatile double probability;
  private volatile HealthFault health;

  FaultControl(FaultPlan requests, double probability, HealthFault health) {
    setRequests(requests);
    setProbability(probability);
    setHealth(health);
  }

  /** The fault applied to generation requests that carry no {@code X-Mock-Fault} header. */
  public FaultPlan requests() {
    return requests;
  }

  public void setRequests(FaultPlan requests) {
    this.requests = Objects.requireNonNull(requests, "requests");
  }

  /** Fraction 0..1 of header-less generation requests that get {@link #requests()}. */
  public double probability() {
    return probability;
  }

  /**
   * @throws IllegalArgumentException unless {@code 0 <= probability <= 1}
   */
  public void setProbability(double probability) {
    if (!(probability >= 0 && probability <= 1)) {
      throw new IllegalArgumentException("probability: " + probability + " (expected: 0..1)");
    }
    this.probability = probability;
  }

  /** How {@code /health} answers. */
  public HealthFault health() {
    return health;
  }

  public void setHealth(HealthFault health) {
    this.health = Objects.requireNonNull(health, "health");
  }
}
