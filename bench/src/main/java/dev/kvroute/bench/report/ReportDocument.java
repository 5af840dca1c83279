package dev.kvroute.bench.report;

import java.util.List;
import java.util.Objects;

/**
 * What a report page says: a title, a few plain-text paragraphs (workload, command, wall time), the
 * figures of the run, and optionally the simulator's prediction for the same run and the simulated
 * runs whose range judges agreement.
 *
 * <p>Immutable and thread-safe.
 *
 * @param title page title
 * @param notes paragraphs shown above the table, plain text
 * @param run the figures the page is about (measured, or simulated for {@code simulate})
 * @param prediction the simulator's figures for the same workload, or {@code null}
 * @param predictionRange the simulated runs whose span a measured figure must fall near to agree
 *     (see {@link Agreement#ofRange(RunReport, List)}): {@code prediction} first, then e.g. runs with
 *     jittered send times; empty without a prediction
 */
public record ReportDocument(
    String title, List<String> notes, RunReport run, RunReport prediction, List<RunReport> predictionRange) {
  public ReportDocument {
    Objects.requireNonNull(title, "title");
    notes = List.copyOf(notes);
    Objects.requireNonNull(run, "run");
    predictionRange = List.copyOf(predictionRange);
    if (prediction != null && (predictionRange.isEmpty() || predictionRange.get(0) != prediction)) {
      throw new IllegalArgumentException("predictionRange: must start with the prediction");
    }
  }

  /** A page whose agreement is judged against the prediction alone. */
  public ReportDocument(String title, List<String> notes, RunReport run, RunReport prediction) {
    this(title, notes, run, prediction, prediction == null ? List.of() : List.of(prediction));
  }
}
