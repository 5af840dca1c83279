package dev.kvroute.bench.load;

import dev.kvroute.bench.report.PolicyFigures;
import java.util.List;

/**
 * One policy's real run: the explainer's figures (client-measured TTFT and usage, engines' prefill
 * seconds) with what they were computed from.
 *
 * @param figures the policy's figures; replica prefill seconds are the increase of each engine's
 *     {@code vllm:request_prefill_time_seconds_sum} over the run
 * @param load what the client measured
 * @param engines each engine's counter increase over the run, in fleet order
 */
public record MeasuredRun(PolicyFigures figures, LoadResult load, List<EngineMetrics> engines) {
  public MeasuredRun {
    engines = List.copyOf(engines);
  }

  /** The fleet's prefix-cache hit rate from the engines' counters (the cross-check of the usage figure). */
  public double engineHitRate() {
    return fleet().hitRate();
  }

  /**
   * The engines' own mean TTFT (arrival at the engine to first token): the client's TTFT minus the
   * time spent in the client, the router and the network.
   */
  public double engineMeanTtftSeconds() {
    return fleet().meanTtftSeconds();
  }

  /** The engines' counters summed. */
  public EngineMetrics fleet() {
    EngineMetrics sum = EngineMetrics.ZERO;
    for (EngineMetrics e : engines) {
      sum = sum.plus(e);
    }
    return sum;
  }
}
