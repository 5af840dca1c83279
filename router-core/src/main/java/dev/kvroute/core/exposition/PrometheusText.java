package dev.kvroute.core.exposition;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * A reader of the Prometheus text exposition format, version 0.0.4 (what vLLM and SGLang serve on
 * {@code /metrics} through prometheus_client), as the format's specification in the Prometheus
 * documentation ("Exposition formats") defines it. The OpenMetrics text format reads too: its
 * {@code # EOF} is a comment and exemplars ({@code value # {trace_id="t"} 1.0}) are ignored.
 *
 * <p>What is read, line by line ({@code \n}, a trailing {@code \r} is tolerated):
 *
 * <ul>
 *   <li>Blank lines and lines whose first non-blank character is {@code #} ({@code # HELP},
 *       {@code # TYPE}, comments) are skipped.
 *   <li>A sample is {@code name [{label="value",...}] value [timestamp]}, tokens separated by
 *       spaces or tabs. Names match {@code [a-zA-Z_:][a-zA-Z0-9_:]*} (vLLM's {@code vllm:} prefix
 *       included), label names {@code [a-zA-Z_][a-zA-Z0-9_]*}; label values are in double quotes with
 *       {@code \\}, {@code \"} and {@code \n} escapes, and a trailing comma before {@code }} is
 *       allowed. Values are floats as Go's {@code ParseFloat} reads them in decimal, including
 *       {@code NaN}, {@code +Inf}, {@code -Inf} (case-insensitive); the timestamp is an integer of
 *       milliseconds.
 *   <li>A line that is neither is malformed and skipped, so one bad line costs only itself: a bad
 *       name, an unterminated label set, an unknown escape, a repeated label name, an unreadable
 *       value or timestamp, or anything after the timestamp other than an exemplar.
 * </ul>
 *
 * <p>Types ({@code # TYPE}) are not interpreted: a histogram is its {@code _bucket}, {@code _sum} and
 * {@code _count} samples (see {@link Sample}), a counter may be written with or without its {@code
 * _total} suffix, and callers that accept both say so. Prometheus 3's quoted UTF-8 metric names
 * ({@code {"my.metric"}}) are not read (the line is skipped).
 *
 * <p>Stateless and thread-safe.
 */
public final class PrometheusText {
  private PrometheusText() {}

  /** Every sample of {@code text}, in order; malformed lines skipped (see the class doc). */
  public static List<Sample> samples(CharSequence text) {
    return samples(text, name -> true);
  }

  /**
   * The samples of {@code text} whose metric name {@code names} accepts, in order; malformed lines
   * skipped. The labels and value of a sample whose name is not accepted are not read (a scrape of
   * a large exposition for a few gauges costs little more than finding each line's name).
   */
  public static List<Sample> samples(CharSequence text, Predicate<? super String> names) {
    List<Sample> out = new ArrayList<>();
    int n = text.length();
    int start = 0;
    while (start < n) {
      int end = start;
      while (end < n && text.charAt(end) != '\n') {
        end++;
      }
      Sample s = line(text, start, end, names);
      if (s != null) {
        out.add(s);
      }
      start = end + 1;
    }
    return out;
  }

  /**
   * A sample value or a histogram bound ({@code le}) as the format writes it: a decimal float, or
   * {@code NaN}, {@code Inf}, {@code +Inf}, {@code -Inf}, {@code Infinity} in any case.
   *
   * @throws NumberFormatException if {@code text} is none of those (hexadecimal floats and Java's
   *     {@code d}/{@code f} suffixes included)
   */
  public static double parseValue(String text) {
    String t = text;
    boolean negative = false;
    if (!t.isEmpty() && (t.charAt(0) == '+' || t.charAt(0) == '-')) {
      negative = t.charAt(0) == '-';
      t = t.substring(1);
    }
    if (t.equalsIgnoreCase("inf") || t.equalsIgnoreCase("infinity")) {
      return negative ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
    }
    if (t.equalsIgnoreCase("nan")) {
      return Double.NaN;
    }
    boolean digit = false;
    for (int i = 0; i < t.length(); i++) {
      char c = t.charAt(i);
      if (c >= '0' && c <= '9') {
        digit = true;
      } else if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-') {
        throw new NumberFormatException("not a Prometheus value: " + text);
      }
    }
    if (!digit) {
      throw new NumberFormatException("not a Prometheus value: " + text);
    }
    return Double.parseDouble(text);
  }

  /** The sample on {@code text[from, to)}, or null for a comment, a blank, a malformed or unwanted line. */
  private static Sample line(CharSequence text, int from, int to, Predicate<? super String> names) {
    if (to > from && text.charAt(to - 1) == '\r') {
      to--;
    }
    int i = skipBlanks(text, from, to);
    if (i == to || text.charAt(i) == '#') {
      return null;
    }
    int nameStart = i;
    if (!nameStart(text.charAt(i))) {
      return null;
    }
    i++;
    while (i < to && namePart(text.charAt(i))) {
      i++;
    }
    if (i < to && text.charAt(i) != '{' && !blank(text.charAt(i))) {
      return null;
    }
    String name = text.subSequence(nameStart, i).toString();
    if (!names.test(name)) {
      return null;
    }
    i = skipBlanks(text, i, to);
    Map<String, String> labels = Map.of();
    if (i < to && text.charAt(i) == '{') {
      Map<String, String> read = new HashMap<>();
      i = labels(text, i + 1, to, read);
      if (i < 0) {
        return null;
      }
      labels = read;
      i = skipBlanks(text, i, to);
    }
    int valueStart = i;
    while (i < to && !blank(text.charAt(i))) {
      i++;
    }
    if (i == valueStart) {
      return null;
    }
    double value;
    try {
      value = parseValue(text.subSequence(valueStart, i).toString());
    } catch (NumberFormatException e) {
      return null;
    }
    i = skipBlanks(text, i, to);
    long timestamp = Sample.NO_TIMESTAMP;
    if (i < to && text.charAt(i) != '#') {
      int tsStart = i;
      while (i < to && !blank(text.charAt(i))) {
        i++;
      }
      try {
        timestamp = Long.parseLong(text.subSequence(tsStart, i).toString());
      } catch (NumberFormatException e) {
        return null;
      }
      i = skipBlanks(text, i, to);
    }
    if (i < to && text.charAt(i) != '#') {
      return null; // an exemplar ("# {...} v") may follow; nothing else may
    }
    return new Sample(name, labels, value, timestamp);
  }

  /**
   * Reads the label pairs after a {@code {} into {@code out}; the index after the closing {@code }},
   * or -1 when the set is malformed.
   */
  private static int labels(CharSequence text, int i, int to, Map<String, String> out) {
    StringBuilder value = new StringBuilder();
    while (true) {
      i = skipBlanks(text, i, to);
      if (i == to) {
        return -1;
      }
      if (text.charAt(i) == '}') {
        return i + 1;
      }
      int nameStart = i;
      if (!labelNameStart(text.charAt(i))) {
        return -1;
      }
      i++;
      while (i < to && labelNamePart(text.charAt(i))) {
        i++;
      }
      String labelName = text.subSequence(nameStart, i).toString();
      i = skipBlanks(text, i, to);
      if (i == to || text.charAt(i) != '=') {
        return -1;
      }
      i = skipBlanks(text, i + 1, to);
      if (i == to || text.charAt(i) != '"') {
        return -1;
      }
      i++;
      value.setLength(0);
      while (true) {
        if (i == to) {
          return -1;
        }
        char c = text.charAt(i++);
        if (c == '"') {
          break;
        }
        if (c == '\\') {
          if (i == to) {
            return -1;
          }
          char e = text.charAt(i++);
          switch (e) {
            case '\\' -> value.append('\\');
            case '"' -> value.append('"');
            case 'n' -> value.append('\n');
            default -> {
              return -1;
            }
          }
        } else {
          value.append(c);
        }
      }
      if (out.putIfAbsent(labelName, value.toString()) != null) {
        return -1;
      }
      i = skipBlanks(text, i, to);
      if (i == to) {
        return -1;
      }
      if (text.charAt(i) == ',') {
        i++;
      } else if (text.charAt(i) != '}') {
        return -1;
      }
    }
  }

  private static int skipBlanks(CharSequence text, int i, int to) {
    while (i < to && blank(text.charAt(i))) {
      i++;
    }
    return i;
  }

  private static boolean blank(char c) {
    return c == ' ' || c == '\t';
  }

  private static boolean labelNameStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }

  private static boolean labelNamePart(char c) {
    return labelNameStart(c) || (c >= '0' && c <= '9');
  }

  private static boolean nameStart(char c) {
    return labelNameStart(c) || c == ':';
  }

  private static boolean namePart(char c) {
    return labelNamePart(c) || c == ':';
  }
}
