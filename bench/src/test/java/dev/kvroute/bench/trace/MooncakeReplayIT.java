package dev.kvroute.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.assertj.core.data.Offset.offset;

import dev.kvroute.bench.load.LoadProgress;
import dev.kvroute.bench.load.MeasuredRun;
import dev.kvroute.bench.report.Agreement;
import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.report.Tables;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.server.MockEngineServer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * The simulator predicts a real replay of the Mooncake trace: 30 seconds of it (minute 20, 95
 * requests) on 4 replicas (about 60% busy), each of {@code round-robin} and {@code cache-aware} on a
 * fresh bundled fleet at time scale 2, against the simulator's exact run and three runs with arrivals
 * jittered by up to 20 model milliseconds (about what the in-process harness adds at K = 2). Decode runs
 * at 300 tokens/s so the replies drain quickly; with the FCFS prefill queue decode speed changes neither
 * TTFT nor prefill.
 *
 * <p>Every policy's real hit rate must be within 3 points and its mean TTFT within 15% of the simulated
 * range, the usage hit rate must equal the engines' counters, and every request must complete.
 * Skipped when the shared trace is not beside the repository. Leak detection is off while it runs (as
 * in the seed agreement test): paranoid detection slows the path tenfold, and leaks are the proxy's
 * and the engine's own tests' business.
 */
@org.junit.jupiter.api.extension.ExtendWith(dev.kvroute.bench.LeakDetectionOff.class)
class MooncakeReplayIT {
  @Test
  void aRealReplayOfATraceSliceAgreesWithTheSimulator() throws Exception {
    assumeThat(Files.exists(MooncakeTraceTest.SHARED_TRACE)).as("shared trace present").isTrue();
    double k = 2;
    List<String> policies = List.of("round-robin", "cache-aware");
    PromptTokenizer tokenizer = MockEngineServer.sharedPromptTokenizer(Tokenizer.DEFAULT_ENCODING);
    MooncakeConfig d = MooncakeConfig.defaults();
    MooncakeConfig config =
        new MooncakeConfig(
            20, 20.5, 1, Arrivals.JITTER, d.bucketSeconds(), d.seed(), SessionKeys.CONVERSATION, 4,
            d.kvCapacityTokens(), 64, d.scheduler(), d.maxNumBatchedTokens(), d.prefillTokensPerSecond(),
            d.prefillOverheadSeconds(), 300);
    MooncakeWorkload w =
        MooncakeWorkload.create(
            MooncakeTrace.read(MooncakeTraceTest.SHARED_TRACE), config,
            BlockTokens.of(SingleTokenVocabulary.of(tokenizer.tokenizer())));
    SimPolicies sp = SimPolicies.seedScenario();

    RunReport exact = MooncakeReplay.simulate(w, sp, policies, 2, tokenizer).report();
    List<RunReport> jittered = MooncakeReplay.simulateJittered(w, sp, policies, 2, tokenizer, 0.01 * k, 3);
    MooncakeReplay.Measured real =
        MooncakeReplay.runBundled(w, sp, policies, k, 5, tokenizer, System.out, p -> LoadProgress.none());

    System.out.print(Tables.comparison(real.measured(), exact).plain());
    for (MeasuredRun m : real.runs()) {
      assertThat(m.load().errors()).as(m.figures().policy() + " errors " + m.load().errorSamples()).isZero();
      assertThat(m.figures().requests()).isEqualTo(w.size());
      assertThat(m.engineHitRate()).as("engine counters agree with usage").isCloseTo(m.figures().hitRate(), offset(1e-9));
    }
    List<Agreement> agreements = new ArrayList<>();
    for (PolicyFigures r : real.measured().policies()) {
      List<PolicyFigures> range = new ArrayList<>();
      range.add(exact.policy(r.policy()).orElseThrow());
      jittered.forEach(j -> range.add(j.policy(r.policy()).orElseThrow()));
      Agreement a = Agreement.ofRange(r, range);
      agreements.add(a);
      System.out.printf(
          Locale.ROOT, "%s: real hit %.1f%% TTFT %.3f s; simulated TTFT %.3f..%.3f s; %s%n", r.policy(),
          r.hitRate() * 100, r.meanTtftSeconds(),
          range.stream().mapToDouble(PolicyFigures::meanTtftSeconds).min().orElseThrow(),
          range.stream().mapToDouble(PolicyFigures::meanTtftSeconds).max().orElseThrow(), a);
    }
    assertThat(agreements)
        .allSatisfy(
            a -> {
              assertThat(Math.abs(a.hitRatePoints())).as(a + " hit rate").isLessThanOrEqualTo(Agreement.MAX_HIT_RATE_POINTS);
              assertThat(Math.abs(a.meanTtftRelative())).as(a + " mean TTFT").isLessThanOrEqualTo(Agreement.MAX_MEAN_TTFT_RELATIVE);
            });
  }
}
