package dev.kvroute.cli.logging;

import java.util.logging.Level;

/**
 * The levels {@code --log-level} and {@code KVROUTE_LOG_LEVEL} accept, lowest volume first, and the
 * {@code java.util.logging} level each enables (the {@link System.Logger} levels kvroute logs with map to
 * these: {@code ERROR} to {@code SEVERE}, {@code WARNING} to {@code WARNING}, {@code INFO} to {@code INFO},
 * {@code DEBUG} to {@code FINE}, {@code TRACE} to {@code FINER}).
 */
public enum LogLevel {
  /** Only failures: a request the router could not serve, a handler that threw. */
  ERROR(Level.SEVERE),
  /** Plus conditions an operator should look at (docs/operations.md, "Logs"). */
  WARN(Level.WARNING),
  /** Plus state changes: start, backends added or removed, health changes, engine restarts (default). */
  INFO(Level.INFO),
  /** Plus one line per request (its timeline) and per connection error; Netty stays at INFO. */
  DEBUG(Level.FINE),
  /** Everything, Netty's own debug lines included. */
  TRACE(Level.FINEST);

  private final Level jul;

  LogLevel(Level jul) {
    this.jul = jul;
  }

  /** The {@code java.util.logging} threshold of this level. */
  public Level jul() {
    return jul;
  }
}
