package dev.kvroute.bench.report;

import java.util.List;
import java.util.Objects;

/**
 * What a report page says: a title, a few plain-text paragraphs (workload, command, wall time), the
 * figures of the run, and optionally the simulator's prediction for the same run.
 *
 * <p>Immutable and thread-safe.
 *
 * @param title page title
 * @param notes paragraphs shown above the table, plain text
 * @param run the figures the page is about (measured, or simulated for {@code simulate})
 * @param prediction the simulator's figures for the same workload, or {@code null}
 */
public record ReportDocument(String title, List<String> notes, RunReport run, RunReport prediction) {
  public ReportDocument {
    Objects.requireNonNull(title, "title");
    notes = List.copyOf(notes);
    Objects.requireNonNull(run, "run");
  }
}
