package dev.kvroute.bench.sim;

import dev.kvroute.core.Ticker;

/**
 * The simulator's clock: model nanoseconds, moved forward only by the event loop. Router-core reads it
 * through {@link Ticker}.
 *
 * <p>Not thread-safe: one simulation thread owns it.
 */
final class VirtualClock implements Ticker {
  private long nowNanos;

  @Override
  public long nanos() {
    return nowNanos;
  }

  void advanceTo(long nanos) {
    if (nanos < nowNanos) {
      throw new IllegalStateException("time went backwards: " + nanos + " < " + nowNanos);
    }
    nowNanos = nanos;
  }
}
