package dev.kvroute.cli.logging;

import io.netty.util.internal.logging.InternalLoggerFactory;
import io.netty.util.internal.logging.JdkLoggerFactory;
import java.io.PrintStream;
import java.util.Locale;
import java.util.Map;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The kvroute process's logging: every module logs through {@link System.Logger} (the JDK's platform
 * logging, which the JDK backs with {@code java.util.logging}), and the launcher installs here one
 * handler on the root logger that writes each event as one line ({@link LineFormatter}) to standard
 * error. Netty is pointed at the same loggers ({@link JdkLoggerFactory}) so its lines look the same.
 *
 * <p>Why not SLF4J: the code already logs through one JDK API with no dependency, Netty falls back to it
 * by itself, and the only thing missing was the format; a formatter is 150 lines, a logging backend is a
 * dependency and a configuration file.
 *
 * <p>The level comes from {@code --log-level}, else {@code KVROUTE_LOG_LEVEL}, else {@code info}; the
 * format from {@code --log-format}, else {@code KVROUTE_LOG_FORMAT}, else {@code text}. Netty's own
 * loggers stay at {@code INFO} unless the level is {@code trace}.
 *
 * <p>Thread-safe: {@link #install} may be called again (after the command line is parsed) and replaces
 * the handler.
 */
public final class Logging {
  /** Environment variable giving the level when {@code --log-level} is absent. */
  public static final String LEVEL_ENV = "KVROUTE_LOG_LEVEL";
  /** Environment variable giving the format when {@code --log-format} is absent. */
  public static final String FORMAT_ENV = "KVROUTE_LOG_FORMAT";

  private static volatile LineFormatter current = new LineFormatter(LogFormat.TEXT, false);
  /** Held so that its level stays set (java.util.logging keeps loggers only weakly). */
  private static final Logger NETTY = Logger.getLogger("io.netty");

  private Logging() {}

  /**
   * Routes Netty's logging to {@code java.util.logging}; call before any Netty class is loaded (Netty
   * picks its logger factory once, and would pick SLF4J or Log4j if one were on the class path).
   */
  public static void routeNetty() {
    InternalLoggerFactory.setDefaultFactory(JdkLoggerFactory.INSTANCE);
  }

  /**
   * Replaces the root logger's handlers with one writing one line per event to {@code stream}.
   *
   * @param level the threshold
   * @param format text or JSON lines
   * @param stream where lines go (standard error in the launcher)
   * @param env the environment ({@code KVROUTE_DEBUG} set adds stack traces at any level)
   */
  public static synchronized void install(LogLevel level, LogFormat format, PrintStream stream, Map<String, String> env) {
    boolean stacks = level.jul().intValue() <= Level.FINE.intValue() || env.get("KVROUTE_DEBUG") != null;
    LineFormatter formatter = new LineFormatter(format, stacks);
    LogManager.getLogManager().reset();
    Logger root = Logger.getLogger("");
    root.setLevel(level.jul());
    Handler h = new LineHandler(stream);
    h.setFormatter(formatter);
    h.setLevel(Level.ALL);
    root.addHandler(h);
    NETTY.setLevel(level == LogLevel.TRACE ? Level.ALL : Level.INFO);
    current = formatter;
  }

  /**
   * The level named by {@code flag}, else by {@code KVROUTE_LOG_LEVEL} in {@code env}, else {@code INFO}.
   *
   * @throws IllegalArgumentException naming the variable and the accepted values, if the variable's
   *     value is not a level
   */
  public static LogLevel level(LogLevel flag, Map<String, String> env) {
    return flag != null ? flag : parse(LogLevel.class, env.get(LEVEL_ENV), LEVEL_ENV, LogLevel.INFO);
  }

  /** The format named by {@code flag}, else by {@code KVROUTE_LOG_FORMAT} in {@code env}, else text. */
  public static LogFormat format(LogFormat flag, Map<String, String> env) {
    return flag != null ? flag : parse(LogFormat.class, env.get(FORMAT_ENV), FORMAT_ENV, LogFormat.TEXT);
  }

  private static <E extends Enum<E>> E parse(Class<E> type, String value, String name, E otherwise) {
    if (value == null || value.isBlank()) {
      return otherwise;
    }
    try {
      return Enum.valueOf(type, value.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      StringBuilder expected = new StringBuilder();
      for (E c : type.getEnumConstants()) {
        expected.append(expected.length() == 0 ? "" : ", ").append(c.name().toLowerCase(Locale.ROOT));
      }
      throw new IllegalArgumentException(name + "=" + value + " (expected: one of " + expected + ")", e);
    }
  }

  /**
   * A line in the installed format, for messages written where the logging system may already be shut
   * down (a JVM shutdown hook: the JDK's own hook closes the logging handlers concurrently).
   */
  public static String line(Level level, String logger, String message) {
    return current.format(level, logger, message);
  }

  /** Writes each formatted record to a stream and flushes it; never closes the stream. */
  private static final class LineHandler extends Handler {
    private final PrintStream stream;

    LineHandler(PrintStream stream) {
      this.stream = stream;
    }

    @Override
    public void publish(LogRecord record) {
      if (!isLoggable(record)) {
        return;
      }
      String s;
      try {
        s = getFormatter().format(record);
      } catch (RuntimeException e) {
        reportError(null, e, java.util.logging.ErrorManager.FORMAT_FAILURE);
        return;
      }
      synchronized (this) {
        stream.print(s);
        stream.flush();
      }
    }

    @Override
    public void flush() {
      stream.flush();
    }

    @Override
    public void close() {
      flush();
    }
  }
}
