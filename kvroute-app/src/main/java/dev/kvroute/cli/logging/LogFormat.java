package dev.kvroute.cli.logging;

/** How each log event is written: one line either way ({@code --log-format}). */
public enum LogFormat {
  /** {@code 2026-12-01T19:39:57.123Z INFO  HealthChecker backend a: KV capacity 262144 tokens}. */
  TEXT,
  /**
   * One JSON object per line for log shippers: {@code time} (ISO-8601, UTC), {@code level}, {@code logger}
   * (the full name), {@code message}, {@code thread}, and {@code error} when the event carries an exception.
   */
  JSON
}
