package dev.kvroute.bench.report;

import java.util.ArrayList;
import java.util.List;

/**
 * How far a real run is from the simulator's prediction for one policy, and whether that is within
 * the project's tolerance: hit rate within {@value #MAX_HIT_RATE_POINTS} percentage points, mean TTFT
 * within {@value #MAX_MEAN_TTFT_RELATIVE} relative, busiest/mean within {@value #MAX_BUSIEST_DELTA}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param policy the policy compared
 * @param hitRatePoints real minus simulated hit rate, in percentage points
 * @param meanTtftRelative real over simulated mean TTFT, minus 1
 * @param busiestDelta real minus simulated busiest/mean
 */
public record Agreement(String policy, double hitRatePoints, double meanTtftRelative, double busiestDelta) {
  public static final double MAX_HIT_RATE_POINTS = 3;
  public static final double MAX_MEAN_TTFT_RELATIVE = 0.15;
  public static final double MAX_BUSIEST_DELTA = 0.15;

  public static Agreement of(PolicyFigures real, PolicyFigures simulated) {
    double ttft =
        simulated.meanTtftSeconds() > 0
            ? real.meanTtftSeconds() / simulated.meanTtftSeconds() - 1
            : (real.meanTtftSeconds() > 0 ? Double.POSITIVE_INFINITY : 0);
    return new Agreement(
        real.policy(),
        (real.hitRate() - simulated.hitRate()) * 100,
        ttft,
        real.busiestOverMean() - simulated.busiestOverMean());
  }

  /** Agreement of every policy of {@code real} that {@code simulated} also has, in {@code real}'s order. */
  public static List<Agreement> of(RunReport real, RunReport simulated) {
    List<Agreement> out = new ArrayList<>();
    for (PolicyFigures r : real.policies()) {
      simulated.policy(r.policy()).ifPresent(s -> out.add(of(r, s)));
    }
    return out;
  }

  /** Whether every figure is within tolerance. */
  public boolean within() {
    return Math.abs(hitRatePoints) <= MAX_HIT_RATE_POINTS
        && Math.abs(meanTtftRelative) <= MAX_MEAN_TTFT_RELATIVE
        && Math.abs(busiestDelta) <= MAX_BUSIEST_DELTA;
  }
}
