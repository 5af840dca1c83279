package dev.kvroute.bench.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.bench.load.IndexAccuracy;
import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.LoadSettings;
import dev.kvroute.bench.load.LoadTest;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.SideTraffic;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.server.MockEngineServer;
import org.junit.jupiter.api.Test;

/**
 * Side traffic through real sockets: the load driver sends the side requests straight to their
 * engines, so the engines serve more requests than the router routed, and the run's figures are the
 * routed requests' alone; the routers' index accuracy is read from their metrics.
 */
class SideTrafficIT {
  /** 2 engines, 2 sessions each of 3 short turns. */
  private static final SeedWorkloadConfig TINY =
      new SeedWorkloadConfig(2, 2, 2, 2_000, 0.5, 3, 0, 3, 3, 100, 0.5, 20, 0.5, 0.5, 5, 15_000, 0.02, 30, 16, 3);

  @Test
  void sideRequestsReachTheEnginesWithoutTheRouter() throws Exception {
    PromptTokenizer tokenizer = MockEngineServer.sharedPromptTokenizer(Tokenizer.DEFAULT_ENCODING);
    Workload w = SeedWorkload.generate(TINY, tokenizer);
    SideTraffic side = SideTraffic.of(w, TINY, 2, 4, tokenizer);
    double k = 4;
    try (BundledFleet fleet =
        BundledFleet.start(w.fleet(), "cache-aware", SimPolicies.seedScenario(), k, tokenizer)) {
      MeasuredRun run =
          LoadTest.run(side, LoadSettings.of(fleet.routerUri(), k, null), fleet.engineUris(), "cache-aware",
              LoadProgress.none());
      IndexAccuracy accuracy = IndexAccuracy.scrape(fleet.routerUris());

      assertThat(run.load().errors()).isZero();
      assertThat(side.sideSessions()).isEqualTo(8);
      assertThat(run.figures().requests()).isEqualTo(w.requests());
      assertThat(run.load().requests()).hasSize(w.requests());
      assertThat(run.load().requestsPerBackend().values().stream().mapToLong(Long::longValue).sum())
          .as("requests the router answered").isEqualTo(w.requests());
      assertThat(run.load().side().requests()).isEqualTo(8);
      assertThat(run.fleet().ttftCount()).as("requests the engines served").isEqualTo(w.requests() + 8.0);
      // every routed request's prediction and report reached the router's metrics
      assertThat(accuracy.reportedCachedTokens()).isEqualTo(run.load().figures().cachedTokens());
      assertThat(accuracy.predictedCachedTokens()).isPositive();
    }
  }
}
