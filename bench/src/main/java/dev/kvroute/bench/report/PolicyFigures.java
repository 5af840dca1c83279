package dev.kvroute.bench.report;

import java.util.List;
import java.util.Objects;

/**
 * The explainer's figures for one policy over one run, all times in model seconds. Field names are the
 * keys of {@code results.json}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param policy policy name, e.g. {@code cache-aware}
 * @param requests requests completed
 * @param hitRate cached prompt tokens over prompt tokens, 0..1
 * @param meanTtftSeconds mean time to first token
 * @param p90TtftSeconds 90th percentile time to first token (HdrHistogram, 3 significant digits)
 * @param busiestOverMean the busiest replica's prefill seconds over the mean replica's (1 = perfectly
 *     even; 0 when no replica did any prefill)
 * @param fleetPrefillSeconds prefill seconds summed over replicas
 * @param replicaPrefillSeconds prefill seconds of each replica, in fleet order
 */
public record PolicyFigures(
    String policy,
    long requests,
    double hitRate,
    double meanTtftSeconds,
    double p90TtftSeconds,
    double busiestOverMean,
    double fleetPrefillSeconds,
    List<Double> replicaPrefillSeconds) {
  public PolicyFigures {
    Objects.requireNonNull(policy, "policy");
    replicaPrefillSeconds = List.copyOf(replicaPrefillSeconds);
  }

  /** The same figures under another policy name (a run whose router's policy the label did not name). */
  public PolicyFigures withPolicy(String name) {
    return new PolicyFigures(
        name, requests, hitRate, meanTtftSeconds, p90TtftSeconds, busiestOverMean, fleetPrefillSeconds,
        replicaPrefillSeconds);
  }

  /** {@code busiestOverMean} and {@code fleetPrefillSeconds} computed from per-replica seconds. */
  public static PolicyFigures of(
      String policy,
      long requests,
      double hitRate,
      double meanTtftSeconds,
      double p90TtftSeconds,
      List<Double> replicaPrefillSeconds) {
    double sum = 0;
    double max = 0;
    for (double s : replicaPrefillSeconds) {
      sum += s;
      max = Math.max(max, s);
    }
    double mean = replicaPrefillSeconds.isEmpty() ? 0 : sum / replicaPrefillSeconds.size();
    double busiest = mean > 0 ? max / mean : 0;
    return new PolicyFigures(
        policy, requests, hitRate, meanTtftSeconds, p90TtftSeconds, busiest, sum, replicaPrefillSeconds);
  }
}
