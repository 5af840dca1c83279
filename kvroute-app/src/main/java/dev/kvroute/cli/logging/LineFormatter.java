package dev.kvroute.cli.logging;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.logging.Formatter;
import java.util.logging.Level;
import java.util.logging.LogRecord;

/**
 * Formats a {@code java.util.logging} record as one line: time (ISO-8601, UTC, milliseconds), level
 * ({@code ERROR}, {@code WARN}, {@code INFO}, {@code DEBUG}, {@code TRACE}), logger (the class's simple
 * name in text, the full name in JSON) and message; an exception is appended to the same line as
 * {@code "| Class: message"}. Its stack trace follows on indented lines only when {@code stackTraces} is
 * on (at {@code --log-level debug} or below, or with {@code KVROUTE_DEBUG} set), so at the default level
 * every event is exactly one line.
 *
 * <p>Thread-safe (immutable).
 */
public final class LineFormatter extends Formatter {
  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);
  private static final JsonFactory JSON = new JsonFactory();

  private final LogFormat format;
  private final boolean stackTraces;

  /**
   * @param format text or JSON lines
   * @param stackTraces whether an exception's stack trace follows its line (indented, text only; JSON
   *     carries it in {@code stack})
   */
  public LineFormatter(LogFormat format, boolean stackTraces) {
    this.format = format;
    this.stackTraces = stackTraces;
  }

  @Override
  public String format(LogRecord r) {
    String message = oneLine(formatMessage(r));
    return format == LogFormat.JSON ? json(r, message) : text(r, message);
  }

  /** A line for {@code message} as if {@code logger} had logged it now at {@code level}. */
  public String format(Level level, String logger, String message) {
    LogRecord r = new LogRecord(level, message);
    r.setLoggerName(logger);
    return format(r);
  }

  private String text(LogRecord r, String message) {
    StringBuilder b = new StringBuilder(96 + message.length());
    b.append(TIME.format(r.getInstant())).append(' ');
    String level = levelName(r.getLevel());
    b.append(level).append(" ".repeat(Math.max(1, 6 - level.length())));
    b.append(simpleName(r.getLoggerName())).append(' ').append(message);
    Throwable t = r.getThrown();
    if (t != null) {
      b.append(" | ").append(oneLine(String.valueOf(t)));
      if (stackTraces) {
        b.append(System.lineSeparator()).append("    ").append(stackTrace(t).stripTrailing().replace("\n", "\n    "));
      }
    }
    return b.append(System.lineSeparator()).toString();
  }

  private String json(LogRecord r, String message) {
    StringWriter w = new StringWriter(128 + message.length());
    try (JsonGenerator g = JSON.createGenerator(w)) {
      g.writeStartObject();
      g.writeStringField("time", TIME.format(r.getInstant()));
      g.writeStringField("level", levelName(r.getLevel()));
      g.writeStringField("logger", String.valueOf(r.getLoggerName()));
      g.writeStringField("message", message);
      g.writeStringField("thread", Thread.currentThread().getName());
      Throwable t = r.getThrown();
      if (t != null) {
        g.writeStringField("error", String.valueOf(t));
        if (stackTraces) {
          g.writeStringField("stack", stackTrace(t));
        }
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return w.append(System.lineSeparator()).toString();
  }

  /** {@code ERROR}, {@code WARN}, {@code INFO}, {@code DEBUG} (FINE, CONFIG) or {@code TRACE} (FINER, FINEST). */
  static String levelName(Level level) {
    int v = level.intValue();
    if (v >= Level.SEVERE.intValue()) {
      return "ERROR";
    }
    if (v >= Level.WARNING.intValue()) {
      return "WARN";
    }
    if (v >= Level.INFO.intValue()) {
      return "INFO";
    }
    if (v >= Level.FINE.intValue()) {
      return "DEBUG";
    }
    return "TRACE";
  }

  private static String simpleName(String logger) {
    if (logger == null || logger.isEmpty()) {
      return "root";
    }
    int dot = logger.lastIndexOf('.');
    return dot < 0 ? logger : logger.substring(dot + 1);
  }

  /** Line breaks inside a message become {@code " / "}, so that one event stays one line. */
  private static String oneLine(String s) {
    return s.indexOf('\n') < 0 && s.indexOf('\r') < 0 ? s : s.replace("\r\n", " / ").replace('\r', ' ').replace("\n", " / ");
  }

  private static String stackTrace(Throwable t) {
    StringWriter w = new StringWriter();
    t.printStackTrace(new PrintWriter(w));
    return w.toString();
  }
}
