package dev.kvroute.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import org.junit.jupiter.api.Test;

class SimulatorTest {
  static final PromptTokenizer TOKENIZER = PromptTokenizer.create(Tokenizer.defaultTokenizer());
  static final SingleTokenVocabulary WORDS = SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());

  @Test
  void roundRobinRunsTheSeedWorkload() {
    long t0 = System.nanoTime();
    Workload w = SeedWorkload.generate(SeedWorkloadConfig.defaults(), TOKENIZER);
    long t1 = System.nanoTime();
    PolicyFigures f = new Simulator(TOKENIZER, WORDS, SimPolicies.seedScenario(), 1).run(w, "round-robin");
    long t2 = System.nanoTime();
    System.out.printf("generate %.2f s, simulate %.2f s, requests %d, mean final %.0f, capacity %d%n%s%n",
        (t1 - t0) / 1e9, (t2 - t1) / 1e9, w.requests(), w.meanFinalHistoryTokens(), w.fleet().kvCapacityTokens(), f);
    assertThat(f.requests()).isEqualTo(w.requests());
  }
}
