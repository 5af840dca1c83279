package dev.kvroute.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.SideTraffic;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.index.KvEventIndex;
import java.util.Locale;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * Engines that also serve traffic no router sees, in the simulator: side sessions sent straight to
 * the engines evict pages an approximate router still predicts, while a precise router reads the
 * evictions from the KV events; and a precise router's view lags the engines as the timing says.
 */
class SideLoadSimulationTest {
  /** 4 replicas × 6 sessions, room for 3 sessions' histories per engine: every policy evicts. */
  private static final SeedWorkloadConfig SMALL =
      new SeedWorkloadConfig(
          4, 6, 10, 6_000, 0.5, 6, 0.25, 3, 30, 300, 0.5, 200, 0.6, 5, 3, 15_000, 0.02, 30, 16, 7);

  /** Two one-shot side requests per routed session, over about the routed sessions' run. */
  private static SideTraffic side(Workload w) {
    return SideTraffic.of(w, SMALL, 2, 60, SimulatorTest.TOKENIZER);
  }

  private static Simulator simulator(SimPolicies policies) {
    return new Simulator(SimulatorTest.TOKENIZER, SimulatorTest.WORDS, policies, 1, true);
  }

  private static double accuracy(Simulator.Result r) {
    return (double) r.diagnostics().predictedCachedTokens() / r.diagnostics().actualCachedTokens();
  }

  @Test
  void sideSessionsBypassTheRouterAndStayOutOfTheFigures() {
    Workload w = SeedWorkload.generate(SMALL, SimulatorTest.TOKENIZER);
    SideTraffic side = side(w);
    SimPolicies policies = SimPolicies.seedScenario();
    Simulation sim =
        new Simulation(
                side.workload(), SimulatorTest.WORDS,
                fleet -> policies.router("cache-aware", fleet, SimulatorTest.TOKENIZER), true, SendJitter.NONE)
            .sideTraffic(side, SimulatorTest.TOKENIZER);
    var figures = sim.run("cache-aware");
    SimDiagnostics d = sim.diagnostics("cache-aware");
    var alone = simulator(policies).runDetailed(w, "cache-aware");

    assertThat(figures.requests()).isEqualTo(w.requests());
    assertThat(d.requestsPerReplica().stream().mapToLong(Long::longValue).sum()).isEqualTo(w.requests());
    assertThat(d.rules().values().stream().mapToLong(Long::longValue).sum()).isEqualTo(w.requests());
    assertThat(sim.sideRequests()).isEqualTo(side.workload().requests() - w.requests()).isPositive();
    assertThat(sim.sideHitRate()).as("nobody reuses a side request's document").isLessThan(0.02);
    // the engines did the side traffic's prefill too
    assertThat(figures.fleetPrefillSeconds()).isGreaterThan(alone.figures().fleetPrefillSeconds());
  }

  @Test
  void sideLoadMisleadsTheApproximateRouterButNotThePreciseOne() {
    // the seed scenario at half size (room for 5 of 8 sessions per engine, as 10 of 16), 2 side documents per session
    SeedWorkloadConfig config = SeedWorkloadConfig.defaults().withFleet(4, 8).withCacheSessions(5);
    Workload w = SeedWorkload.generate(config, SimulatorTest.TOKENIZER);
    SideTraffic side = SideTraffic.of(w, config, 2, SimulatorTest.TOKENIZER);
    Simulator sim = simulator(SimPolicies.seedScenario());

    Simulator.Result approximateAlone = sim.runDetailed(w, "cache-aware");
    Simulator.Result approximate = sim.runDetailed(side, "cache-aware");
    Simulator.Result precise = sim.runDetailed(side, "cache-aware/precise");
    Simulator.Result oracle = sim.runDetailed(side, "oracle");
    System.out.printf(Locale.ROOT,
        "approximate alone: hit %.3f stale %d missed %d; with side load: approximate hit %.3f stale %d missed %d, "
            + "precise hit %.3f stale %d missed %d, oracle hit %.3f%n",
        approximateAlone.figures().hitRate(), approximateAlone.diagnostics().staleAtRoute(),
        approximateAlone.diagnostics().lostAtRoute(), approximate.figures().hitRate(),
        approximate.diagnostics().staleAtRoute(), approximate.diagnostics().lostAtRoute(), precise.figures().hitRate(),
        precise.diagnostics().staleAtRoute(), precise.diagnostics().lostAtRoute(), oracle.figures().hitRate());

    // the approximate index believes in pages the side traffic evicted, and misses better replicas
    assertThat(approximate.diagnostics().staleAtRoute())
        .isGreaterThan(approximateAlone.diagnostics().staleAtRoute());
    assertThat(approximate.diagnostics().lostAtRoute()).isGreaterThan(precise.diagnostics().lostAtRoute());
    // the precise one reads the evictions from the events: never stale, the oracle's very decisions
    assertThat(precise.diagnostics().staleAtRoute()).isZero();
    assertThat(precise.diagnostics().rules()).isEqualTo(oracle.diagnostics().rules());
    assertThat(precise.figures().hitRate()).isCloseTo(oracle.figures().hitRate(), Offset.offset(0.005));
  }

  @Test
  void eventsThatArriveLateMisleadAPreciseRouter() {
    Workload w = SeedWorkload.generate(SMALL, SimulatorTest.TOKENIZER);
    Simulator.Result live = simulator(SimPolicies.seedScenario()).runDetailed(w, "cache-aware/precise");
    // each view 20 model s behind its engine (within the 30 s before it would fall back), nothing speculated
    Simulator.Result late =
        simulator(SimPolicies.seedScenario().withPrecise(new SimPolicies.PreciseTiming(0, 20)))
            .runDetailed(w, "cache-aware/precise");
    Simulator.Result delayed =
        simulator(SimPolicies.seedScenario().withPrecise(new SimPolicies.PreciseTiming(2, 0.05)))
            .runDetailed(w, "cache-aware/precise");
    System.out.printf(Locale.ROOT, "precise live: hit %.3f stale %d; 20 s late: hit %.3f stale %d; 50 ms: hit %.3f stale %d%n",
        live.figures().hitRate(), live.diagnostics().staleAtRoute(), late.figures().hitRate(),
        late.diagnostics().staleAtRoute(), delayed.figures().hitRate(), delayed.diagnostics().staleAtRoute());
    assertThat(live.diagnostics().staleAtRoute()).isZero();
    assertThat(late.diagnostics().staleAtRoute()).isPositive();
    assertThat(late.figures().hitRate()).isLessThan(live.figures().hitRate() - 0.05);
    assertThat(delayed.figures().hitRate()).isCloseTo(live.figures().hitRate(), Offset.offset(0.03));
  }

  @Test
  void aRealRoutersWallClockTimingIsKTimesLongerInModelTime() {
    SimPolicies.PreciseTiming t = SimPolicies.PreciseTiming.ofWallClock(KvEventIndex.Settings.DEFAULT, 2, 0.002);
    assertThat(t.speculativeTtlSeconds()).isEqualTo(4.0);
    assertThat(t.eventDelaySeconds()).isEqualTo(0.004);
    assertThat(t.settings().speculativeTtl()).isEqualTo(java.time.Duration.ofSeconds(4));
    assertThat(SimPolicies.seedScenario().timing()).isEqualTo(SimPolicies.PreciseTiming.DEFAULT);
    assertThatThrownBy(() -> new SimPolicies.PreciseTiming(-1, 0)).hasMessageContaining("speculativeTtlSeconds: -1");
    assertThatThrownBy(() -> new SimPolicies.PreciseTiming(2, Double.NaN)).hasMessageContaining("eventDelaySeconds");
  }
}
