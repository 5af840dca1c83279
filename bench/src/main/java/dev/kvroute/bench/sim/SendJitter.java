package dev.kvroute.bench.sim;

/**
 * A random delay added to the send time of every simulated request, uniform in
 * {@code [0, maxSeconds)} model seconds, drawn from a generator seeded with {@code seed}: the timing
 * noise of a real client, network and router. With none the simulator is an idealisation in which
 * requests that the workload times together arrive exactly together, which can phase-lock
 * order-dependent policies (round-robin's rotation) with the sessions' cycles; a set of jittered runs
 * shows the spread a real run can land in.
 *
 * <p>Immutable and thread-safe.
 *
 * @param maxSeconds the largest delay, model seconds; 0 for none
 * @param seed seed of the delays
 */
public record SendJitter(double maxSeconds, long seed) {
  /** No jitter: requests are sent exactly when the workload says. */
  public static final SendJitter NONE = new SendJitter(0, 0);

  public SendJitter {
    if (!(maxSeconds >= 0) || Double.isInfinite(maxSeconds)) {
      throw new IllegalArgumentException("maxSeconds: " + maxSeconds + " (expected: a finite number >= 0)");
    }
  }
}
