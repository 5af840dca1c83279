package dev.kvroute.bench.load;

import java.util.Locale;

/**
 * Whether a real run kept up with its time scale: a real run at time scale K is a faithful replay of
 * the model only while the machine does each wall second's work within that second. Three lags show
 * when it does not, all in model seconds (wall seconds x K):
 *
 * <ul>
 *   <li>engine clock lag: how late the mock engines' timers fired against their model clocks (the
 *       99th percentile's bucket bound of {@code kvroute_mock_clock_lag_seconds} over the run): every
 *       token is written that late;
 *   <li>send lag: how late the load driver sent requests against their schedule (99th percentile): the
 *       workload's arrivals drift;
 *   <li>path overhead: the client's mean TTFT minus the engines' own mean TTFT ({@code
 *       vllm:time_to_first_token_seconds}): time in the client, the router and the sockets, which a
 *       model of the fleet does not have.
 * </ul>
 *
 * <p>A run is trustworthy when each is at most {@code maxLagSeconds}. The default, {@value
 * #DEFAULT_MAX_LAG_SECONDS} model seconds, is small beside the seed workload's TTFTs (1.4 to 4 s) and
 * the 15% within which the demo calls a real run and the simulator in agreement. When a run is not, the
 * suggested time scale assumes the wall-clock delays stay as measured, so the model-time lag shrinks in
 * proportion to K; it is an estimate (a lower K also means less work per wall second), rounded down to
 * a whole step.
 *
 * <p>Immutable and thread-safe.
 *
 * @param timeScale the run's K
 * @param engineLagSeconds engine clock lag, p99 bucket bound, model seconds (NaN when the engines do not
 *     export it: a real fleet)
 * @param sendLagSeconds load driver's send lag, p99, model seconds
 * @param overheadSeconds client mean TTFT minus engine mean TTFT, model seconds (NaN when unknown)
 * @param maxLagSeconds the bound each must stay within, model seconds
 */
public record RunTrust(
    double timeScale, double engineLagSeconds, double sendLagSeconds, double overheadSeconds, double maxLagSeconds) {
  /** The default bound on each lag, in model seconds. */
  public static final double DEFAULT_MAX_LAG_SECONDS = 0.1;

  /** Time scales the suggestion rounds down to. */
  private static final double[] STEPS = {20, 10, 8, 5, 4, 3, 2, 1.5, 1, 0.5, 0.25};

  /** The lags of {@code run} at time scale {@code timeScale}. */
  public static RunTrust of(MeasuredRun run, double timeScale, double maxLagSeconds) {
    EngineMetrics fleet = run.fleet();
    double engineLag = fleet.clockLag().count() > 0 ? fleet.clockLag().quantileUpperBound(0.99) : Double.NaN;
    double overhead =
        fleet.ttftCount() > 0 ? run.figures().meanTtftSeconds() - fleet.meanTtftSeconds() : Double.NaN;
    return new RunTrust(
        timeScale, engineLag, run.load().p99SendLateMillis() / 1e3 * timeScale, overhead, maxLagSeconds);
  }

  /** The largest of the three lags that are known. */
  public double worstLagSeconds() {
    double w = sendLagSeconds;
    if (!Double.isNaN(engineLagSeconds)) {
      w = Math.max(w, engineLagSeconds);
    }
    if (!Double.isNaN(overheadSeconds)) {
      w = Math.max(w, overheadSeconds);
    }
    return w;
  }

  /** Whether every known lag is within {@link #maxLagSeconds}. */
  public boolean trustworthy() {
    return worstLagSeconds() <= maxLagSeconds;
  }

  /**
   * A time scale at which the lags would be within bound if the machine's wall-clock delays stayed as
   * measured: K x bound / worst lag, rounded down to a step; {@link #timeScale} when the run is
   * trustworthy.
   */
  public double suggestedTimeScale() {
    if (trustworthy()) {
      return timeScale;
    }
    double k = timeScale * maxLagSeconds / worstLagSeconds();
    for (double step : STEPS) {
      if (step <= k && step < timeScale) {
        return step;
      }
    }
    return STEPS[STEPS.length - 1];
  }

  /** One line: the lags, and the verdict with what to do when the run is not trustworthy. */
  public String describe(String label) {
    String lags =
        String.format(
            Locale.ROOT,
            "%s: clock lag at K = %s (model seconds; bound %.3f): engines p99 %s, load driver sends p99 %.3f, "
                + "router and client path %s",
            label, fmt(timeScale), maxLagSeconds,
            Double.isNaN(engineLagSeconds) ? "n/a (not a mock engine)" : bound(engineLagSeconds), sendLagSeconds,
            Double.isNaN(overheadSeconds) ? "n/a" : String.format(Locale.ROOT, "%.3f", overheadSeconds));
    if (trustworthy()) {
      return lags + ": the run kept up with its time scale.";
    }
    return lags + String.format(
        Locale.ROOT,
        ": NOT TRUSTWORTHY: this machine fell behind the model clock, so TTFT and hit rate are not the "
            + "model's; run again at --time-scale %s or lower (and start the engines with the same scale).",
        fmt(suggestedTimeScale()));
  }

  private static String bound(double seconds) {
    return Double.isInfinite(seconds) ? "> 10" : String.format(Locale.ROOT, "<= %.3f", seconds);
  }

  /** A time scale as flags take it: {@code 5}, {@code 1.5}. */
  public static String fmt(double k) {
    return k == Math.rint(k) ? String.valueOf((long) k) : String.valueOf(k);
  }
}
