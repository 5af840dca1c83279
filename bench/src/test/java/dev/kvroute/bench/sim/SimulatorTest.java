package dev.kvroute.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.ReportWriter;
import dev.kvroute.bench.report.RunReport;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The simulator's metamorphic properties (Caffeine simulator style: relations between runs rather
 * than pinned numbers), on reduced seed scenarios so that the suite stays fast.
 */
class SimulatorTest {
  static final PromptTokenizer TOKENIZER = PromptTokenizer.create(Tokenizer.defaultTokenizer());
  static final SingleTokenVocabulary WORDS = SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());

  /** 3 replicas × 6 sessions, shorter documents: every policy evicts, in about a second. */
  static final SeedWorkloadConfig SMALL =
      new SeedWorkloadConfig(
          3, 6, 10, 6_000, 0.5, 6, 0.25, 3, 30, 300, 0.5, 200, 0.6, 5, 3, 15_000, 0.02, 30, 16, 7);

  private static Simulator simulator() {
    return new Simulator(TOKENIZER, WORDS, SimPolicies.seedScenario(), 2);
  }

  @Test
  void withOneEngineEveryPolicyGivesTheSameFigures() {
    Workload w = SeedWorkload.generate(SMALL.withFleet(1, 8), TOKENIZER);
    RunReport r = simulator().runAll(w, SimPolicies.names());

    PolicyFigures first = r.policies().get(0);
    assertThat(first.requests()).isEqualTo(w.requests());
    assertThat(first.hitRate()).isPositive();
    for (PolicyFigures f : r.policies()) {
      assertThat(withoutName(f)).as(f.policy()).isEqualTo(withoutName(first));
    }
  }

  @Test
  void doublingKvCapacityNeverLowersTheRoundRobinHitRate() {
    Workload w = SeedWorkload.generate(SMALL, TOKENIZER);
    double previous = -1;
    for (int factor = 1; factor <= 8; factor *= 2) {
      Workload bigger = w.withFleet(w.fleet().withKvCapacityTokens(w.fleet().kvCapacityTokens() * factor));
      double hit = simulator().run(bigger, "round-robin").hitRate();
      assertThat(hit).as("capacity x%d", factor).isGreaterThanOrEqualTo(previous);
      previous = hit;
    }
  }

  @Test
  void theSameSeedGivesTheSameReportAndAnotherSeedAnotherOne() {
    List<String> policies = List.of("round-robin", "sticky", "cache-aware", "cost", "oracle");
    RunReport a = simulator().runAll(SeedWorkload.generate(SMALL, TOKENIZER), policies);
    RunReport b = simulator().runAll(SeedWorkload.generate(SMALL, TOKENIZER), policies);
    RunReport c = simulator().runAll(SeedWorkload.generate(SMALL.withSeed(8), TOKENIZER), policies);

    assertThat(ReportWriter.json(b)).isEqualTo(ReportWriter.json(a));
    assertThat(c).isNotEqualTo(a);
  }

  @Test
  void everyRequestCompletesAndPrefillSecondsAddUp() {
    Workload w = SeedWorkload.generate(SMALL, TOKENIZER);
    for (PolicyFigures f : simulator().runAll(w, List.of("round-robin", "cache-aware", "oracle")).policies()) {
      assertThat(f.requests()).isEqualTo(w.requests());
      assertThat(f.replicaPrefillSeconds()).hasSize(3);
      double sum = f.replicaPrefillSeconds().stream().mapToDouble(Double::doubleValue).sum();
      assertThat(f.fleetPrefillSeconds()).isCloseTo(sum, org.assertj.core.data.Offset.offset(1e-9));
      // every request pays at least the fixed overhead
      assertThat(f.fleetPrefillSeconds()).isGreaterThanOrEqualTo(0.02 * w.requests());
      assertThat(f.p90TtftSeconds()).isGreaterThanOrEqualTo(0.02);
    }
  }

  @Test
  void theOracleKnowsTheCachesSoItNeverPredictsAMissingPrefixAtTheDecision() {
    Workload w = SeedWorkload.generate(SMALL, TOKENIZER);
    SimDiagnostics d =
        new Simulator(TOKENIZER, WORDS, SimPolicies.seedScenario(), 1, true).runDetailed(w, "oracle").diagnostics();
    assertThat(d.staleAtRoute()).isZero();
    assertThat(d.requests()).hasSize(w.requests());
  }

  @Test
  void rejectsUnknownPolicies() {
    Workload w = SeedWorkload.generate(SMALL.withFleet(1, 1), TOKENIZER);
    assertThatThrownBy(() -> simulator().run(w, "fastest"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("policy: fastest");
  }

  private static PolicyFigures withoutName(PolicyFigures f) {
    return new PolicyFigures(
        "", f.requests(), f.hitRate(), f.meanTtftSeconds(), f.p90TtftSeconds(), f.busiestOverMean(),
        f.fleetPrefillSeconds(), f.replicaPrefillSeconds());
  }
}
