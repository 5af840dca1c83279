package dev.kvroute.bench.load;

/**
 * Receives the load driver's progress about once a second of wall time, from a timer thread.
 * Implementations must be thread-safe and must not block.
 */
@FunctionalInterface
public interface LoadProgress {
  /**
   * @param done requests completed so far
   * @param total requests in the workload
   * @param activeSessions sessions started and not finished
   * @param meanTtftSeconds mean TTFT so far, model seconds
   * @param p90TtftSeconds p90 TTFT so far, model seconds
   * @param hitRate cached over prompt tokens so far
   * @param errors failed requests so far
   */
  void update(long done, long total, int activeSessions, double meanTtftSeconds, double p90TtftSeconds, double hitRate, long errors);

  /** Progress that goes nowhere. */
  static LoadProgress none() {
    return (d, t, a, m, p, h, e) -> {};
  }

  /**
   * A one-line progress display on standard error: redrawn in place ({@code \r}) when a console is
   * attached, otherwise printed every {@code 10} updates.
   */
  static LoadProgress terminal(String label) {
    boolean console = System.console() != null;
    int[] calls = {0};
    return (done, total, active, mean, p90, hit, errors) -> {
      String line =
          String.format(
              java.util.Locale.ROOT,
              "%s: %d/%d requests, %d sessions active, hit rate %.1f%%, TTFT mean %.3f s p90 %.3f s%s",
              label, done, total, active, hit * 100, mean, p90, errors > 0 ? ", " + errors + " errors" : "");
      synchronized (calls) {
        if (console) {
          System.err.print("\r" + line + "\u001b[K");
          if (done == total) {
            System.err.println();
          }
        } else if (calls[0]++ % 10 == 0 || done == total) {
          System.err.println(line);
        }
      }
    };
  }
}
