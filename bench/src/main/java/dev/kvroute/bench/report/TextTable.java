package dev.kvroute.bench.report;

import java.util.ArrayList;
import java.util.List;

/**
 * A small table of strings rendered as GitHub Markdown or as aligned plain text for the terminal.
 * The first column is left-aligned, the others right-aligned.
 *
 * <p>Not thread-safe.
 */
public final class TextTable {
  private final List<String> header;
  private final List<List<String>> rows = new ArrayList<>();

  public TextTable(List<String> header) {
    this.header = List.copyOf(header);
  }

  /** Adds a row; it must have as many cells as the header. */
  public TextTable row(List<String> cells) {
    if (cells.size() != header.size()) {
      throw new IllegalArgumentException(
          "row: " + cells.size() + " cells (expected: " + header.size() + ")");
    }
    rows.add(List.copyOf(cells));
    return this;
  }

  public List<String> header() {
    return header;
  }

  public List<List<String>> rows() {
    return List.copyOf(rows);
  }

  /** GitHub Markdown, one line per row, ending with a newline. */
  public String markdown() {
    StringBuilder sb = new StringBuilder();
    line(sb, header);
    sb.append('|');
    for (int i = 0; i < header.size(); i++) {
      sb.append(i == 0 ? "---|" : "---:|");
    }
    sb.append('\n');
    for (List<String> r : rows) {
      line(sb, r);
    }
    return sb.toString();
  }

  /** Aligned columns separated by two spaces, ending with a newline. */
  public String plain() {
    int[] width = new int[header.size()];
    for (int i = 0; i < width.length; i++) {
      width[i] = header.get(i).length();
      for (List<String> r : rows) {
        width[i] = Math.max(width[i], r.get(i).length());
      }
    }
    StringBuilder sb = new StringBuilder();
    padded(sb, header, width);
    for (List<String> r : rows) {
      padded(sb, r, width);
    }
    return sb.toString();
  }

  private static void line(StringBuilder sb, List<String> cells) {
    sb.append('|');
    for (String c : cells) {
      sb.append(' ').append(c.replace("|", "\\|")).append(" |");
    }
    sb.append('\n');
  }

  private static void padded(StringBuilder sb, List<String> cells, int[] width) {
    for (int i = 0; i < cells.size(); i++) {
      String c = cells.get(i);
      String pad = " ".repeat(width[i] - c.length());
      if (i > 0) {
        sb.append("  ").append(pad).append(c);
      } else {
        sb.append(c).append(pad);
      }
    }
    int end = sb.length();
    while (end > 0 && sb.charAt(end - 1) == ' ') {
      end--;
    }
    sb.setLength(end);
    sb.append('\n');
  }
}
