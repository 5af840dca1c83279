package dev.kvroute.bench.sim;

/**
 * The router's admission settings an overload scenario runs with, in model time: the same values go
 * to the simulator's {@link OverloadSimulation} and, the deadline divided by the time scale, to the
 * real router's {@code admission} configuration.
 *
 * <p>The per-backend limit is explicit (the router's {@code maxConcurrencyPerBackend}): the learned
 * limit reads an {@code fcfs-prefill} engine, whose prefills always queue behind one another, as a
 * full batch at whatever it is running, which the simulator does not model.
 *
 * @param perBackend requests in flight per backend, {@code >= 1}
 * @param maxQueueLength requests waiting in the router at most, {@code >= 0}
 * @param deadlineSeconds longest wait in the router's queue, model seconds, {@code > 0}
 */
public record AdmissionLimits(int perBackend, int maxQueueLength, double deadlineSeconds) {
  public AdmissionLimits {
    if (perBackend < 1) {
      throw new IllegalArgumentException("perBackend: " + perBackend + " (expected: >= 1)");
    }
    if (maxQueueLength < 0) {
      throw new IllegalArgumentException("maxQueueLength: " + maxQueueLength + " (expected: >= 0)");
    }
    if (!(deadlineSeconds > 0) || Double.isInfinite(deadlineSeconds)) {
      throw new IllegalArgumentException("deadlineSeconds: " + deadlineSeconds + " (expected: > 0)");
    }
  }
}
