package dev.kvroute.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.Workload;
import org.junit.jupiter.api.Test;

/**
 * Precise mode in the simulator: the engines' KV events, decoded as a subscriber decodes them, give
 * a router the engines' true caches; with several routers splitting a session's turns, precise mode
 * keeps that knowledge and approximate mode loses it.
 */
class PreciseSimulationTest {
  /** 4 replicas × 6 sessions, shorter documents: every policy evicts. */
  private static final SeedWorkloadConfig SMALL =
      new SeedWorkloadConfig(
          4, 6, 10, 6_000, 0.5, 6, 0.25, 3, 30, 300, 0.5, 200, 0.6, 5, 3, 15_000, 0.02, 30, 16, 7);

  private static Simulator simulator(int routers) {
    return new Simulator(SimulatorTest.TOKENIZER, SimulatorTest.WORDS,
        SimPolicies.seedScenario().withRouters(routers), 1, true);
  }

  @Test
  void onePreciseRouterNeverPredictsAPrefixTheEngineLacks() {
    Workload w = SeedWorkload.generate(SMALL, SimulatorTest.TOKENIZER);
    Simulator.Result precise = simulator(1).runDetailed(w, "cache-aware/precise");
    Simulator.Result oracle = simulator(1).runDetailed(w, "oracle");
    assertThat(precise.diagnostics().staleAtRoute()).isZero();
    assertThat(precise.figures().requests()).isEqualTo(w.requests());
    assertThat(precise.figures().hitRate()).isCloseTo(oracle.figures().hitRate(),
        org.assertj.core.data.Offset.offset(0.01));
  }

  @Test
  void withFourRoutersPreciseKeepsTheHitRateAndApproximateLosesIt() {
    Workload w = SeedWorkload.generate(SMALL, SimulatorTest.TOKENIZER);
    double single = simulator(1).run(w, "cache-aware/precise").hitRate();
    Simulator.Result precise = simulator(4).runDetailed(w, "cache-aware/precise");
    Simulator.Result approximate = simulator(4).runDetailed(w, "cache-aware");
    // a small workload: 4 points of noise (the seed workload's 128 sessions: 1.7 points, docs/results.md)
    assertThat(precise.figures().hitRate()).isCloseTo(single, org.assertj.core.data.Offset.offset(0.05));
    assertThat(precise.diagnostics().staleAtRoute()).isZero();
    assertThat(approximate.figures().hitRate()).isLessThan(precise.figures().hitRate() - 0.05);
    assertThat(approximate.diagnostics().staleAtRoute()).isPositive();
  }

  @Test
  void theNameSelectsTheIndexAndUnknownBasesAreRefused() {
    assertThat(SimPolicies.precise("cache-aware/precise")).isTrue();
    org.assertj.core.api.Assertions.assertThatThrownBy(
            () -> SimPolicies.seedScenario().check("fastest/precise"))
        .hasMessageContaining("policy: fastest/precise");
    PolicyFigures f = simulator(2).run(SeedWorkload.generate(SMALL.withFleet(1, 2), SimulatorTest.TOKENIZER),
        "cost/precise");
    assertThat(f.policy()).isEqualTo("cost/precise");
  }
}
