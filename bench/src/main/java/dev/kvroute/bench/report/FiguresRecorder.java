package dev.kvroute.bench.report;

import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;

/**
 * Accumulates one policy's per-request figures (prompt and cached tokens, time to first token) and
 * turns them, with the replicas' prefill seconds, into {@link PolicyFigures}.
 *
 * <p>TTFT is recorded in microseconds in an HdrHistogram with 3 significant digits (so a 0.882 s
 * TTFT is resolved to 1 ms or better); the mean is computed exactly from the raw sum.
 *
 * <p>Thread-safe: the load driver records from several event loops.
 */
public final class FiguresRecorder {
  private final Histogram ttftMicros = new Histogram(3);
  private long requests;
  private long promptTokens;
  private long cachedTokens;
  private double ttftSecondsSum;

  /**
   * Records one completed request.
   *
   * @param promptTokens the request's prompt tokens
   * @param cachedTokens prompt tokens served from the prefix cache
   * @param ttftSeconds time to first token, model seconds
   */
  public synchronized void record(long promptTokens, long cachedTokens, double ttftSeconds) {
    if (promptTokens < 0 || cachedTokens < 0 || cachedTokens > promptTokens) {
      throw new IllegalArgumentException(
          "tokens: prompt " + promptTokens + ", cached " + cachedTokens
              + " (expected: 0 <= cached <= prompt)");
    }
    if (!(ttftSeconds >= 0)) {
      throw new IllegalArgumentException("ttftSeconds: " + ttftSeconds + " (expected: >= 0)");
    }
    requests++;
    this.promptTokens += promptTokens;
    this.cachedTokens += cachedTokens;
    ttftSecondsSum += ttftSeconds;
    ttftMicros.recordValue(Math.round(ttftSeconds * 1e6));
  }

  public synchronized long requests() {
    return requests;
  }

  /** Cached over prompt tokens so far, 0 when nothing was recorded. */
  public synchronized double hitRate() {
    return promptTokens == 0 ? 0 : (double) cachedTokens / promptTokens;
  }

  /** Mean TTFT so far in seconds, 0 when nothing was recorded. */
  public synchronized double meanTtftSeconds() {
    return requests == 0 ? 0 : ttftSecondsSum / requests;
  }

  /** TTFT at {@code percentile} (0..100) so far, in seconds. */
  public synchronized double ttftSecondsAt(double percentile) {
    return requests == 0 ? 0 : ttftMicros.getValueAtPercentile(percentile) / 1e6;
  }

  public synchronized long promptTokens() {
    return promptTokens;
  }

  public synchronized long cachedTokens() {
    return cachedTokens;
  }

  /** The figures of {@code policy}, with each replica's prefill seconds in fleet order. */
  public synchronized PolicyFigures figures(String policy, List<Double> replicaPrefillSeconds) {
    return PolicyFigures.of(
        policy, requests, hitRate(), meanTtftSeconds(), ttftSecondsAt(90), new ArrayList<>(replicaPrefillSeconds));
  }
}
