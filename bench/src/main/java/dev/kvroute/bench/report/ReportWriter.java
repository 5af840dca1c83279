package dev.kvroute.bench.report;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Renders reports as JSON ({@code results.json}: {@code {"workload","timeScale","policies":[{"policy",
 * "requests","hitRate","meanTtftSeconds","p90TtftSeconds","busiestOverMean","fleetPrefillSeconds",
 * "replicaPrefillSeconds":[...]}]}}), Markdown, and a self-contained HTML page (inline CSS and SVG,
 * no external assets) with the table and one bar per replica of prefill seconds for each policy.
 *
 * <p>Thread-safe (stateless).
 */
public final class ReportWriter {
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

  private ReportWriter() {}

  /** {@code report} as indented JSON, ending with a newline. */
  public static String json(RunReport report) {
    try {
      return JSON.writeValueAsString(report) + "\n";
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize report", e);
    }
  }

  /** Reads a report written by {@link #json}. */
  public static RunReport readJson(String json) {
    try {
      return JSON.readValue(json, RunReport.class);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("not a report: " + e.getOriginalMessage(), e);
    }
  }

  /** A Markdown page: title, notes, the figures table, and the prediction and agreement tables. */
  public static String markdown(ReportDocument doc) {
    StringBuilder sb = new StringBuilder();
    sb.append("# ").append(doc.title()).append("\n\n");
    for (String n : doc.notes()) {
      sb.append(n).append("\n\n");
    }
    if (doc.prediction() == null) {
      sb.append(Tables.figures(doc.run()).markdown());
    } else {
      sb.append("## Measured through real HTTP\n\n").append(Tables.figures(doc.run()).markdown());
      sb.append("\n## Simulator prediction\n\n").append(Tables.figures(doc.prediction()).markdown());
      sb.append("\n## Measured beside predicted\n\n")
          .append(Tables.comparison(doc.run(), doc.predictionRange()).markdown());
      sb.append("\n## Agreement\n\nTolerance: hit rate within ")
          .append(fmt(Agreement.MAX_HIT_RATE_POINTS))
          .append(" points, mean TTFT within ")
          .append(fmt(Agreement.MAX_MEAN_TTFT_RELATIVE * 100))
          .append("%, busiest/mean within ")
          .append(fmt(Agreement.MAX_BUSIEST_DELTA))
          .append(".\n\n")
          .append(Tables.agreement(doc.run(), doc.predictionRange()).markdown());
    }
    sb.append("\nTimes are model seconds. Hit rate = cached prompt tokens / prompt tokens. ")
        .append("Busiest / mean = the busiest replica's prefill seconds over the mean replica's.\n");
    return sb.toString();
  }

  /** A self-contained HTML page with the tables and the per-replica prefill bars. */
  public static String html(ReportDocument doc) {
    StringBuilder sb = new StringBuilder();
    sb.append("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>")
        .append(esc(doc.title()))
        .append("</title>\n<style>\n")
        .append("body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:60rem;")
        .append("margin:2rem auto;padding:0 1rem;color:#222;line-height:1.45}\n")
        .append("table{border-collapse:collapse;margin:1rem 0}th,td{padding:.3rem .7rem;")
        .append("border-bottom:1px solid #ddd}th{text-align:right;font-weight:600}")
        .append("td{text-align:right;font-variant-numeric:tabular-nums}")
        .append("th:first-child,td:first-child{text-align:left}\n")
        .append(".bars{display:flex;flex-wrap:wrap;gap:1.5rem}.policy{margin:.5rem 0}")
        .append(".policy h3{font-size:1rem;margin:.2rem 0}.caption{color:#555;font-size:.9rem}\n")
        .append("svg text{font-size:10px;fill:#555}\n")
        .append("</style>\n</head>\n<body>\n<h1>")
        .append(esc(doc.title()))
        .append("</h1>\n");
    for (String n : doc.notes()) {
      sb.append("<p>").append(esc(n)).append("</p>\n");
    }
    if (doc.prediction() == null) {
      htmlTable(sb, Tables.figures(doc.run()));
    } else {
      sb.append("<h2>Measured through real HTTP</h2>\n");
      htmlTable(sb, Tables.figures(doc.run()));
      sb.append("<h2>Simulator prediction</h2>\n");
      htmlTable(sb, Tables.figures(doc.prediction()));
      sb.append("<h2>Agreement</h2>\n");
      htmlTable(sb, Tables.agreement(doc.run(), doc.predictionRange()));
    }
    sb.append("<h2>Prefill seconds per replica</h2>\n<p class=\"caption\">Each bar is one replica: ")
        .append("seconds of prefill it did over the run, the work that queues a first token.");
    if (doc.prediction() != null) {
      sb.append(" The dark tick on each bar is the simulator's prediction.");
    }
    sb.append("</p>\n<div class=\"bars\">\n");
    double max = 0;
    for (PolicyFigures p : doc.run().policies()) {
      max = Math.max(max, maxOf(p.replicaPrefillSeconds()));
    }
    if (doc.prediction() != null) {
      for (PolicyFigures p : doc.prediction().policies()) {
        max = Math.max(max, maxOf(p.replicaPrefillSeconds()));
      }
    }
    for (PolicyFigures p : doc.run().policies()) {
      PolicyFigures predicted =
          doc.prediction() == null ? null : doc.prediction().policy(p.policy()).orElse(null);
      bars(sb, p, predicted, max);
    }
    sb.append("</div>\n<p class=\"caption\">Times are model seconds. Hit rate = cached prompt tokens / ")
        .append("prompt tokens. Busiest / mean = the busiest replica's prefill seconds over the mean ")
        .append("replica's.</p>\n</body>\n</html>\n");
    return sb.toString();
  }

  /** Writes {@code text} to {@code file} as UTF-8, creating parent directories. */
  public static void write(Path file, String text) {
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Files.writeString(file, text, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }

  private static void htmlTable(StringBuilder sb, TextTable t) {
    sb.append("<table>\n<thead><tr>");
    for (String h : t.header()) {
      sb.append("<th>").append(esc(h)).append("</th>");
    }
    sb.append("</tr></thead>\n<tbody>\n");
    for (List<String> r : t.rows()) {
      sb.append("<tr>");
      for (String c : r) {
        sb.append("<td>").append(esc(c)).append("</td>");
      }
      sb.append("</tr>\n");
    }
    sb.append("</tbody>\n</table>\n");
  }

  private static void bars(StringBuilder sb, PolicyFigures p, PolicyFigures predicted, double max) {
    int n = p.replicaPrefillSeconds().size();
    int barWidth = 22;
    int gap = 6;
    int plotHeight = 120;
    int width = Math.max(1, n * (barWidth + gap));
    int height = plotHeight + 16;
    sb.append("<div class=\"policy\"><h3>")
        .append(esc(p.policy()))
        .append("</h3><div class=\"caption\">busiest / mean ")
        .append(esc(Tables.ratio(p.busiestOverMean())))
        .append(", fleet prefill ")
        .append(esc(Tables.whole(p.fleetPrefillSeconds())))
        .append(" s</div>\n<svg width=\"")
        .append(width)
        .append("\" height=\"")
        .append(height)
        .append("\" viewBox=\"0 0 ")
        .append(width)
        .append(' ')
        .append(height)
        .append("\" role=\"img\" aria-label=\"prefill seconds per replica, ")
        .append(esc(p.policy()))
        .append("\">\n");
    for (int i = 0; i < n; i++) {
      double s = p.replicaPrefillSeconds().get(i);
      double h = max > 0 ? s / max * plotHeight : 0;
      double x = i * (barWidth + gap) + gap / 2.0;
      sb.append(
          String.format(
              Locale.ROOT,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#4a7fb5\"><title>replica %d: %.1f s</title></rect>\n",
              x, plotHeight - h, barWidth, h, i, s));
      if (predicted != null && i < predicted.replicaPrefillSeconds().size()) {
        double ps = predicted.replicaPrefillSeconds().get(i);
        double py = plotHeight - (max > 0 ? ps / max * plotHeight : 0);
        sb.append(
            String.format(
                Locale.ROOT,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"2\" fill=\"#222\"><title>replica %d predicted: %.1f s</title></rect>\n",
                x, py - 1, barWidth, i, ps));
      }
      sb.append(
          String.format(
              Locale.ROOT,
              "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
              x + barWidth / 2.0, height - 3, i));
    }
    sb.append("</svg></div>\n");
  }

  private static double maxOf(List<Double> values) {
    double m = 0;
    for (double v : values) {
      m = Math.max(m, v);
    }
    return m;
  }

  private static String fmt(double v) {
    return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
  }

  static String esc(String s) {
    StringBuilder sb = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '<' -> sb.append("&lt;");
        case '>' -> sb.append("&gt;");
        case '&' -> sb.append("&amp;");
        case '"' -> sb.append("&quot;");
        default -> sb.append(c);
      }
    }
    return sb.toString();
  }
}
