package dev.kvroute.bench.report;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The explainer's table (hit rate, mean and p90 TTFT, busiest/mean, fleet prefill) for a run, and the
 * real-versus-simulated comparison the demo prints. Numbers are formatted with {@link Locale#ROOT}.
 *
 * <p>Thread-safe (stateless).
 */
public final class Tables {
  private Tables() {}

  /** One row per policy: the figures of {@code report}. */
  public static TextTable figures(RunReport report) {
    TextTable t =
        new TextTable(
            List.of(
                "policy", "requests", "hit rate", "mean TTFT (s)", "p90 TTFT (s)", "busiest / mean",
                "fleet prefill (s)"));
    for (PolicyFigures p : report.policies()) {
      t.row(
          List.of(
              p.policy(),
              Long.toString(p.requests()),
              percent(p.hitRate()),
              seconds(p.meanTtftSeconds()),
              seconds(p.p90TtftSeconds()),
              ratio(p.busiestOverMean()),
              whole(p.fleetPrefillSeconds())));
    }
    return t;
  }

  /**
   * One row per policy of {@code real}: each figure as "real / simulated", then whether the pair is
   * within the {@link Agreement} tolerance. Simulated-only policies (e.g. {@code oracle}) follow as
   * reference rows with "-" for the real side.
   */
  public static TextTable comparison(RunReport real, RunReport simulated) {
    TextTable t =
        new TextTable(
            List.of(
                "policy", "hit rate real / sim", "mean TTFT (s) real / sim", "p90 TTFT (s) real / sim",
                "busiest / mean real / sim", "fleet prefill (s) real / sim", "agree"));
    List<String> seen = new ArrayList<>();
    for (PolicyFigures r : real.policies()) {
      seen.add(r.policy());
      Optional<PolicyFigures> s = simulated.policy(r.policy());
      t.row(
          List.of(
              r.policy(),
              pair(percent(r.hitRate()), s.map(x -> percent(x.hitRate()))),
              pair(seconds(r.meanTtftSeconds()), s.map(x -> seconds(x.meanTtftSeconds()))),
              pair(seconds(r.p90TtftSeconds()), s.map(x -> seconds(x.p90TtftSeconds()))),
              pair(ratio(r.busiestOverMean()), s.map(x -> ratio(x.busiestOverMean()))),
              pair(whole(r.fleetPrefillSeconds()), s.map(x -> whole(x.fleetPrefillSeconds()))),
              s.map(x -> Agreement.of(r, x).within() ? "yes" : "NO").orElse("-")));
    }
    for (PolicyFigures s : simulated.policies()) {
      if (!seen.contains(s.policy())) {
        t.row(
            List.of(
                s.policy() + " (sim only)",
                "- / " + percent(s.hitRate()),
                "- / " + seconds(s.meanTtftSeconds()),
                "- / " + seconds(s.p90TtftSeconds()),
                "- / " + ratio(s.busiestOverMean()),
                "- / " + whole(s.fleetPrefillSeconds()),
                "-"));
      }
    }
    return t;
  }

  /** The agreement of each policy: differences and whether they are within tolerance. */
  public static TextTable agreement(RunReport real, RunReport simulated) {
    TextTable t =
        new TextTable(
            List.of("policy", "hit rate (points)", "mean TTFT", "busiest / mean", "within tolerance"));
    for (Agreement a : Agreement.of(real, simulated)) {
      t.row(
          List.of(
              a.policy(),
              String.format(Locale.ROOT, "%+.1f", a.hitRatePoints()),
              String.format(Locale.ROOT, "%+.1f%%", a.meanTtftRelative() * 100),
              String.format(Locale.ROOT, "%+.2f", a.busiestDelta()),
              a.within() ? "yes" : "NO"));
    }
    return t;
  }

  private static String pair(String real, Optional<String> sim) {
    return real + " / " + sim.orElse("-");
  }

  static String percent(double fraction) {
    return String.format(Locale.ROOT, "%.1f%%", fraction * 100);
  }

  static String seconds(double s) {
    return String.format(Locale.ROOT, "%.3f", s);
  }

  static String ratio(double r) {
    return String.format(Locale.ROOT, "%.2fx", r);
  }

  static String whole(double s) {
    return String.format(Locale.ROOT, "%.0f", s);
  }
}
