package dev.kvroute.bench.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.Tables;
import dev.kvroute.bench.sim.SimPolicies;
import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * Two kvroute routers in front of the same eight mock engines through real sockets, every request sent
 * to either in turn (a session's turns visit both), approximate and precise (the engines publish vLLM's
 * KV events and both routers subscribe to every engine): the hit rate of each agrees with the
 * simulator's {@code --routers 2} prediction (within 3 points of the range of the exact and three
 * jittered runs), and precise, which sees what the other router routed, beats approximate as predicted.
 * Only hit rates are asserted: they hang on which engine each turn reached, not on wall-clock timing,
 * which the shared machine makes noisy (the TTFT agreement is {@link SimulatorAgreesWithRealRunIT}'s).
 */
@org.junit.jupiter.api.extension.ExtendWith(dev.kvroute.bench.LeakDetectionOff.class)
class SeveralRoutersIT {
  private static final List<String> POLICIES = List.of("cache-aware", "cache-aware/precise");

  @Test
  void twoRoutersApproximateAndPreciseAgreeWithTheSimulator() throws Exception {
    double k = Double.parseDouble(System.getProperty("kvroute.it.timeScale", "3"));
    SimPolicies policies = SimPolicies.seedScenario().withRouters(2);
    Demo.Settings settings =
        new Demo.Settings(SimulatorAgreesWithRealRunIT.REDUCED, policies, POLICIES, k, 2, false, 3);
    PrintStream log = System.out;
    Demo.Result r = Demo.run(settings, log, p -> LoadProgress.none());
    log.print(Tables.comparison(r.measured(), r.simulatedRange()).plain());

    for (MeasuredRun m : r.runs()) {
      assertThat(m.load().errors()).as(m.figures().policy() + " errors").isZero();
      assertThat(m.figures().requests()).isEqualTo(r.workload().requests());
    }
    for (String policy : POLICIES) {
      PolicyFigures real = r.measured().policy(policy).orElseThrow();
      double min = r.simulatedRange().stream().mapToDouble(s -> s.policy(policy).orElseThrow().hitRate()).min().orElseThrow();
      double max = r.simulatedRange().stream().mapToDouble(s -> s.policy(policy).orElseThrow().hitRate()).max().orElseThrow();
      log.printf(Locale.ROOT, "%s: real hit %.1f%%, simulated %.1f..%.1f%%%n", policy, real.hitRate() * 100, min * 100,
          max * 100);
      assertThat(real.hitRate()).as(policy + " hit rate against the simulated range")
          .isBetween(min - 0.03, max + 0.03);
    }
    double approximate = r.measured().policy("cache-aware").orElseThrow().hitRate();
    double precise = r.measured().policy("cache-aware/precise").orElseThrow().hitRate();
    double predictedGap = r.simulated().policy("cache-aware/precise").orElseThrow().hitRate()
        - r.simulated().policy("cache-aware").orElseThrow().hitRate();
    assertThat(predictedGap).as("the simulator's gap, precise over approximate with two routers").isGreaterThan(0.05);
    assertThat(precise - approximate).as("precise over approximate, real").isGreaterThan(predictedGap / 2);
  }
}
