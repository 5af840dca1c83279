package dev.kvroute.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.Workload;
import org.junit.jupiter.api.Test;

/**
 * The routers' index page apart from the engines' block ({@link SimPolicies#pageSizeTokens}, the
 * simulator's and the demo's {@code --page-size-tokens}): a router indexing 64-token pages in front
 * of 16-token engines credits backends in whole 64-token pages only.
 */
class PageSizeSimulationTest {
  /** SimulatorTest's reduced seed scenario: 3 replicas × 6 sessions, 16-token blocks. */
  private static final SeedWorkloadConfig SMALL = SimulatorTest.SMALL;

  private static SimDiagnostics run(SimPolicies policies, Workload w) {
    return new Simulator(SimulatorTest.TOKENIZER, SimulatorTest.WORDS, policies, 1, true)
        .runDetailed(w, "cache-aware")
        .diagnostics();
  }

  @Test
  void coarserPagesPredictWholePagesOnlyAndEveryRequestStillCompletes() {
    Workload w = SeedWorkload.generate(SMALL, SimulatorTest.TOKENIZER);
    SimPolicies blocks = SimPolicies.seedScenario();
    SimPolicies coarse = blocks.withPageSizeTokens(64);

    SimDiagnostics fine = run(blocks, w);
    SimDiagnostics wide = run(coarse, w);

    assertThat(blocks.pageSizeTokens(16)).isEqualTo(16);
    assertThat(coarse.pageSizeTokens(16)).isEqualTo(64);
    assertThat(wide.requests()).hasSize(w.requests());
    // every prediction is whole 64-token pages, so their sum is too; at the block size it is not
    assertThat(wide.predictedCachedTokens()).isPositive();
    assertThat(wide.predictedCachedTokens() % 64).isZero();
    assertThat(fine.predictedCachedTokens() % 64).isNotZero();
    // each request's match loses under one coarse page against the engine's blocks, never more
    assertThat(wide.predictedCachedTokens())
        .isGreaterThan(fine.predictedCachedTokens() - 64L * w.requests());
  }

  @Test
  void aNegativePageIsRefused() {
    assertThatThrownBy(() -> SimPolicies.seedScenario().withPageSizeTokens(-16))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pageSizeTokens: -16");
  }

  @Test
  void aPreciseRouterTakesOnlyAPageThatDividesTheBlock() {
    Workload w = SeedWorkload.generate(SMALL, SimulatorTest.TOKENIZER);
    SimPolicies coarse = SimPolicies.seedScenario().withPageSizeTokens(64);
    Simulator sim = new Simulator(SimulatorTest.TOKENIZER, SimulatorTest.WORDS, coarse, 1);

    assertThatThrownBy(() -> sim.run(w, "cache-aware/precise"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("policy cache-aware/precise with --page-size-tokens 64")
        .hasMessageContaining("divides the engines' block of 16 tokens");
    assertThat(coarse.pageSizeTokens("cache-aware", 16)).isEqualTo(64);
    SimPolicies finer = SimPolicies.seedScenario().withPageSizeTokens(8);
    assertThat(new Simulator(SimulatorTest.TOKENIZER, SimulatorTest.WORDS, finer, 1)
            .run(w, "cache-aware/precise").requests())
        .isEqualTo(w.requests());
  }
}
