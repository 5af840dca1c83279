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

  /**
   * How far {@code real} is from the range the simulated runs span (e.g. runs with different timing
   * jitter or tie-breaking seeds): 0 for a figure inside {@code [min, max]} of the runs, otherwise the
   * distance to the nearest end (points, relative, or absolute as in {@link #of(PolicyFigures,
   * PolicyFigures)}).
   *
   * @throws IllegalArgumentException if {@code simulated} is empty
   */
  public static Agreement ofRange(PolicyFigures real, List<PolicyFigures> simulated) {
    if (simulated.isEmpty()) {
      throw new IllegalArgumentException("simulated: empty (expected: at least one simulated run)");
    }
    double hitMin = Double.MAX_VALUE;
    double hitMax = -Double.MAX_VALUE;
    double ttftMin = Double.MAX_VALUE;
    double ttftMax = -Double.MAX_VALUE;
    double busyMin = Double.MAX_VALUE;
    double busyMax = -Double.MAX_VALUE;
    for (PolicyFigures s : simulated) {
      hitMin = Math.min(hitMin, s.hitRate());
      hitMax = Math.max(hitMax, s.hitRate());
      ttftMin = Math.min(ttftMin, s.meanTtftSeconds());
      ttftMax = Math.max(ttftMax, s.meanTtftSeconds());
      busyMin = Math.min(busyMin, s.busiestOverMean());
      busyMax = Math.max(busyMax, s.busiestOverMean());
    }
    double ttft =
        real.meanTtftSeconds() > ttftMax ? real.meanTtftSeconds() / ttftMax - 1
            : real.meanTtftSeconds() < ttftMin ? real.meanTtftSeconds() / ttftMin - 1
            : 0;
    return new Agreement(
        real.policy(),
        outside(real.hitRate(), hitMin, hitMax) * 100,
        ttft,
        outside(real.busiestOverMean(), busyMin, busyMax));
  }

  private static double outside(double v, double min, double max) {
    return v > max ? v - max : v < min ? v - min : 0;
  }

  /**
   * {@link #ofRange(PolicyFigures, List)} for every policy of {@code real} that the first of
   * {@code simulatedRuns} also has, against that policy's figures in all of them, in {@code real}'s
   * order.
   *
   * @throws IllegalArgumentException if {@code simulatedRuns} is empty
   */
  public static List<Agreement> ofRange(RunReport real, List<RunReport> simulatedRuns) {
    if (simulatedRuns.isEmpty()) {
      throw new IllegalArgumentException("simulatedRuns: empty (expected: at least one simulated run)");
    }
    List<Agreement> out = new ArrayList<>();
    for (PolicyFigures r : real.policies()) {
      if (simulatedRuns.get(0).policy(r.policy()).isEmpty()) {
        continue;
      }
      List<PolicyFigures> range = new ArrayList<>();
      for (RunReport run : simulatedRuns) {
        run.policy(r.policy()).ifPresent(range::add);
      }
      out.add(ofRange(r, range));
    }
    return out;
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
