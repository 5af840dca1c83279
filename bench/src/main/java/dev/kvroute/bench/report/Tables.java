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
    return comparison(real, List.of(simulated));
  }

  /**
   * As {@link #comparison(RunReport, RunReport)} with the first of {@code simulatedRuns} as the
   * prediction shown, and agreement judged against the range of all of them
   * ({@link Agreement#ofRange(RunReport, List)}).
   */
  public static TextTable comparison(RunReport real, List<RunReport> simulatedRuns) {
    RunReport simulated = simulatedRuns.get(0);
    List<Agreement> agreements = Agreement.ofRange(real, simulatedRuns);
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
              s.map(x -> within(agreements, r.policy()) ? "yes" : "NO").orElse("-")));
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
    return agreement(real, List.of(simulated));
  }

  /**
   * The agreement of each policy with the first of {@code simulatedRuns} (differences, and whether
   * they are within tolerance) and, when there are several runs, with their range (distance outside
   * it, and whether that is within tolerance: the verdict).
   */
  public static TextTable agreement(RunReport real, List<RunReport> simulatedRuns) {
    boolean ranged = simulatedRuns.size() > 1;
    List<String> header =
        new ArrayList<>(List.of("policy", "hit rate (points)", "mean TTFT", "busiest / mean", "within tolerance"));
    if (ranged) {
      header.addAll(
          List.of(
              "outside range of " + simulatedRuns.size() + " runs: hit rate, mean TTFT, busiest / mean",
              "within tolerance of the range"));
    }
    TextTable t = new TextTable(header);
    List<Agreement> range = Agreement.ofRange(real, simulatedRuns);
    List<Agreement> exact = Agreement.of(real, simulatedRuns.get(0));
    for (int i = 0; i < exact.size(); i++) {
      Agreement a = exact.get(i);
      List<String> row = new ArrayList<>(List.of(a.policy(), deltas(a).get(0), deltas(a).get(1), deltas(a).get(2),
          a.within() ? "yes" : "NO"));
      if (ranged) {
        Agreement r = range.get(i);
        row.add(String.join(", ", deltas(r)));
        row.add(r.within() ? "yes" : "NO");
      }
      t.row(row);
    }
    return t;
  }

  private static List<String> deltas(Agreement a) {
    return List.of(
        String.format(Locale.ROOT, "%+.1f", a.hitRatePoints()),
        String.format(Locale.ROOT, "%+.1f%%", a.meanTtftRelative() * 100),
        String.format(Locale.ROOT, "%+.2f", a.busiestDelta()));
  }

  private static boolean within(List<Agreement> agreements, String policy) {
    return agreements.stream().anyMatch(a -> a.policy().equals(policy) && a.within());
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
