package dev.kvroute.bench.load;

import dev.kvroute.core.exposition.PrometheusText;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * A Prometheus histogram of clock lag as the mock engine exports it ({@code
 * kvroute_mock_clock_lag_seconds}: how late the engine's timer fired against its model clock, in model
 * seconds), summed over the engines of a fleet or taken as the increase between two scrapes.
 *
 * <p>Immutable and thread-safe.
 *
 * @param cumulative cumulative count at each bucket's upper bound ({@code le}), {@code +Inf} included;
 *     empty when the engine exports no such histogram (a real vLLM engine)
 */
public record ClockLag(NavigableMap<Double, Double> cumulative) {
  /** No observation: what a real engine, which exports no clock lag, reads as. */
  public static final ClockLag NONE = new ClockLag(new TreeMap<>());

  public ClockLag {
    cumulative = java.util.Collections.unmodifiableNavigableMap(new TreeMap<>(cumulative));
  }

  /** Timer firings observed. */
  public double count() {
    return cumulative.isEmpty() ? 0 : cumulative.lastEntry().getValue();
  }

  /**
   * The upper bound of the bucket holding quantile {@code q} (0..1): at least {@code q} of the firings
   * were at most this late, in model seconds; {@code +Inf} when it lies past the last finite bound, 0
   * when nothing was observed.
   */
  public double quantileUpperBound(double q) {
    double n = count();
    if (n <= 0) {
      return 0;
    }
    for (Map.Entry<Double, Double> e : cumulative.entrySet()) {
      if (e.getValue() >= q * n) {
        return e.getKey();
      }
    }
    return Double.POSITIVE_INFINITY;
  }

  /** This minus {@code earlier}, bucket by bucket. */
  public ClockLag minus(ClockLag earlier) {
    TreeMap<Double, Double> out = new TreeMap<>(cumulative);
    earlier.cumulative.forEach((le, c) -> out.merge(le, -c, Double::sum));
    return new ClockLag(out);
  }

  /** This plus {@code other}, bucket by bucket (engines with the same buckets). */
  public ClockLag plus(ClockLag other) {
    TreeMap<Double, Double> out = new TreeMap<>(cumulative);
    other.cumulative.forEach((le, c) -> out.merge(le, c, Double::sum));
    return new ClockLag(out);
  }

  /**
   * Adds one {@code _bucket} sample with upper bound {@code le} (as printed: a number or {@code +Inf}).
   *
   * @throws NumberFormatException if {@code le} is not a Prometheus value
   */
  static void add(TreeMap<Double, Double> into, String le, double count) {
    double bound = PrometheusText.parseValue(le);
    into.merge(bound, count, Double::sum);
  }
}
