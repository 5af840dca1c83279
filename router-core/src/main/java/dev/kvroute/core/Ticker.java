package dev.kvroute.core;

/**
 * A source of monotonic time in nanoseconds, injected wherever router-core or the engine model needs
 * time, so that the simulator can drive the same code under a virtual clock (Caffeine's {@code Ticker}).
 *
 * <p>Implementations must be thread-safe.
 */
@FunctionalInterface
public interface Ticker {
  /** Nanoseconds elapsed since a fixed but arbitrary origin; never decreases. */
  long nanos();

  /** The JVM's monotonic clock ({@link System#nanoTime()}). */
  static Ticker system() {
    return System::nanoTime;
  }
}
