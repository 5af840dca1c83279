package dev.kvroute.bench.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class ReportWriterTest {
  private static final RunReport REAL =
      new RunReport(
          "seed",
          4.0,
          List.of(
              PolicyFigures.of("round-robin", 1000, 0.06, 1.95, 4.09, List.of(110.0, 115.0, 120.0, 105.0)),
              PolicyFigures.of("cache-aware", 1000, 0.44, 0.882, 1.97, List.of(68.0, 66.0, 70.0, 67.0))));
  private static final RunReport SIM =
      new RunReport(
          "seed",
          null,
          List.of(
              PolicyFigures.of("round-robin", 1000, 0.07, 1.90, 4.00, List.of(110.0, 114.0, 121.0, 104.0)),
              PolicyFigures.of("cache-aware", 1000, 0.40, 0.70, 1.80, List.of(60.0, 60.0, 90.0, 60.0)),
              PolicyFigures.of("oracle", 1000, 0.45, 0.80, 1.90, List.of(66.0, 66.0, 70.0, 67.0))));

  @Test
  void jsonHasExactlyTheIssuesSchema() {
    String json = ReportWriter.json(new RunReport("seed", 4.0, List.of(
        new PolicyFigures("sticky", 3, 0.5, 1.25, 2.5, 2.0, 30.0, List.of(20.0, 10.0)))));
    assertThat(json.replaceAll("\\s", ""))
        .isEqualTo(
            "{\"workload\":\"seed\",\"timeScale\":4.0,\"policies\":[{\"policy\":\"sticky\",\"requests\":3,"
                + "\"hitRate\":0.5,\"meanTtftSeconds\":1.25,\"p90TtftSeconds\":2.5,\"busiestOverMean\":2.0,"
                + "\"fleetPrefillSeconds\":30.0,\"replicaPrefillSeconds\":[20.0,10.0]}]}");
    assertThat(ReportWriter.readJson(ReportWriter.json(REAL))).isEqualTo(REAL);
  }

  @Test
  void markdownShowsTheTable() {
    String md = ReportWriter.markdown(new ReportDocument("t", List.of("note"), SIM, null));
    assertThat(md)
        .contains(
            "| policy | requests | hit rate | mean TTFT (s) | p90 TTFT (s) | busiest / mean | fleet prefill (s) |\n"
                + "|---|---:|---:|---:|---:|---:|---:|\n"
                + "| round-robin | 1000 | 7.0% | 1.900 | 4.000 | 1.08x | 449 |\n"
                + "| cache-aware | 1000 | 40.0% | 0.700 | 1.800 | 1.33x | 270 |\n"
                + "| oracle | 1000 | 45.0% | 0.800 | 1.900 | 1.04x | 269 |\n");
  }

  @Test
  void comparisonFlagsWhatDisagrees() {
    TextTable agreement = Tables.agreement(REAL, SIM);
    assertThat(agreement.rows()).hasSize(2);
    assertThat(agreement.rows().get(0)).containsExactly("round-robin", "-1.0", "+2.6%", "-0.01", "yes");
    assertThat(agreement.rows().get(1).get(4)).isEqualTo("NO");
    assertThat(Tables.comparison(REAL, SIM).rows()).last().satisfies(r -> assertThat(r.get(0)).isEqualTo("oracle (sim only)"));
  }

  @Test
  void aRangeOfSimulatedRunsJudgesByTheNearestEnd() {
    // A second simulated run whose cache-aware figures bracket the real ones from the other side.
    RunReport jittered =
        new RunReport(
            "seed",
            null,
            List.of(
                PolicyFigures.of("round-robin", 1000, 0.07, 1.90, 4.00, List.of(110.0, 114.0, 121.0, 104.0)),
                PolicyFigures.of("cache-aware", 1000, 0.43, 0.85, 1.80, List.of(66.0, 68.0, 69.0, 67.0))));
    List<RunReport> range = List.of(SIM, jittered);

    TextTable agreement = Tables.agreement(REAL, range);
    assertThat(agreement.rows().get(1))
        .containsExactly("cache-aware", "+4.0", "+26.0%", "-0.30", "NO", "+1.0, +3.8%, +0.00", "yes");
    assertThat(Tables.comparison(REAL, range).rows().get(1)).last().isEqualTo("yes");
    assertThat(Tables.comparison(REAL, SIM).rows().get(1)).last().isEqualTo("NO");
    assertThat(ReportWriter.markdown(new ReportDocument("t", List.of(), REAL, SIM, range)))
        .contains("within tolerance of the range");
  }

  @Test
  void htmlIsSelfContainedWithOneBarPerReplica() {
    String html = ReportWriter.html(new ReportDocument("kvroute <demo>", List.of("a & b"), REAL, SIM));
    assertThat(html).contains("<title>kvroute &lt;demo&gt;</title>", "<p>a &amp; b</p>");
    assertThat(html).doesNotContain("http://", "https://", "<script", "<link");
    assertThat(count(html, "fill=\"#4a7fb5\"")).isEqualTo(8);
    assertThat(count(html, "predicted:")).isEqualTo(8);
  }

  @Test
  void plainTableAlignsColumns() {
    String plain = new TextTable(List.of("a", "bb")).row(List.of("xyz", "1")).plain();
    assertThat(plain).isEqualTo("a    bb\nxyz   1\n");
  }

  private static int count(String s, String what) {
    int n = 0;
    for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) {
      n++;
    }
    return n;
  }
}
