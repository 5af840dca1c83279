package dev.kvroute.core.exposition;

import java.util.Map;
import java.util.Objects;

/**
 * One sample line of a Prometheus text exposition: {@code name{labels} value [timestamp]}.
 *
 * <p>A histogram is read as its series, each a sample: {@code NAME_bucket} with the upper bound in
 * label {@code le} (read it with {@link PrometheusText#parseValue}, which knows {@code +Inf}),
 * {@code NAME_sum} and {@code NAME_count}; a summary likewise with {@code quantile}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param name the metric name as written, e.g. {@code vllm:num_requests_running} (colons included)
 * @param labels label names to their unescaped values, unordered; empty when the line has none
 * @param value the value; {@code NaN}, {@code +Inf} and {@code -Inf} as written
 * @param timestampMillis the optional timestamp in milliseconds since the epoch, or {@link
 *     #NO_TIMESTAMP}
 */
public record Sample(String name, Map<String, String> labels, double value, long timestampMillis) {
  /** {@link #timestampMillis()} of a sample written without one. */
  public static final long NO_TIMESTAMP = Long.MIN_VALUE;

  /**
   * @throws NullPointerException if {@code name} or {@code labels} (or a label name or value) is null
   */
  public Sample {
    Objects.requireNonNull(name, "name");
    labels = Map.copyOf(labels);
  }

  /** A sample without labels or timestamp. */
  public static Sample of(String name, double value) {
    return new Sample(name, Map.of(), value, NO_TIMESTAMP);
  }

  /** The value of label {@code labelName}, or {@code null} when the sample has no such label. */
  public String label(String labelName) {
    return labels.get(labelName);
  }
}
