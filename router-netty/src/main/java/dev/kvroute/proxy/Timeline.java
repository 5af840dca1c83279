package dev.kvroute.proxy;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The lifecycle of one request as a list of (state, time, note) entries, for logs, metrics and the
 * {@code kvroute.request.*} timers. Times are nanoseconds of the proxy's ticker.
 *
 * <p>Not thread-safe: owned by the request's event loop.
 */
final class Timeline {
  private final long startNanos;
  private final List<Entry> entries = new ArrayList<>(8);

  private record Entry(Lifecycle state, long nanos, String note) {}

  Timeline(long startNanos) {
    this.startNanos = startNanos;
    entries.add(new Entry(Lifecycle.RECEIVED, startNanos, null));
  }

  /** Records {@code state} at {@code nanos} with an optional note (e.g. the backend). */
  void mark(Lifecycle state, long nanos, String note) {
    entries.add(new Entry(state, nanos, note));
  }

  /** The latest state reached. */
  Lifecycle current() {
    return entries.get(entries.size() - 1).state;
  }

  /** Whether a terminal state has been recorded. */
  boolean ended() {
    return current().terminal();
  }

  /** Time of the first entry in {@code state}, or {@code -1} if it was never reached. */
  long firstNanos(Lifecycle state) {
    for (Entry e : entries) {
      if (e.state == state) {
        return e.nanos;
      }
    }
    return -1;
  }

  /** Nanoseconds from {@link Lifecycle#RECEIVED} to {@code nanos}. */
  long sinceStart(long nanos) {
    return nanos - startNanos;
  }

  long startNanos() {
    return startNanos;
  }

  /** E.g. {@code RECEIVED+0.0ms ROUTED(b1)+0.4ms CONNECTED+1.1ms FIRST_BYTE+85.0ms COMPLETED+900.2ms}. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    for (Entry e : entries) {
      if (sb.length() > 0) {
        sb.append(' ');
      }
      sb.append(e.state);
      if (e.note != null) {
        sb.append('(').append(e.note).append(')');
      }
      sb.append(String.format(Locale.ROOT, "+%.1fms", (e.nanos - startNanos) / 1e6));
    }
    return sb.toString();
  }
}
