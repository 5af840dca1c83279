package dev.kvroute.bench.cli;

import dev.kvroute.bench.report.ReportDocument;
import dev.kvroute.bench.report.ReportWriter;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The report files a command writes, as picocli options ({@code --json}, {@code --markdown},
 * {@code --html}); each is written only when given. Not thread-safe (set by picocli, read once).
 */
final class ReportFiles {
  @Option(names = "--json", paramLabel = "FILE", description = "Write the figures as JSON (results.json schema).")
  Path json;

  @Option(names = "--markdown", paramLabel = "FILE", description = "Write the table as Markdown.")
  Path markdown;

  @Option(names = "--html", paramLabel = "FILE", description = "Write an HTML page with the table and per-replica prefill bars.")
  Path html;

  /** Writes the run's figures as JSON and the page as Markdown and HTML, to the files given. */
  void write(ReportDocument doc) {
    if (json != null) {
      ReportWriter.write(json, ReportWriter.json(doc.run()));
    }
    if (markdown != null) {
      ReportWriter.write(markdown, ReportWriter.markdown(doc));
    }
    if (html != null) {
      ReportWriter.write(html, ReportWriter.html(doc));
    }
  }
}
