package dev.kvroute.bench.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.List;
import org.junit.jupiter.api.Test;

class SeedWorkloadTest {
  private static final SingleTokenVocabulary WORDS = SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());

  /** Counts words as tokens plus a fixed template cost per message, as a chat template would. */
  private static final PromptCounter COUNTER =
      messages -> messages.stream().mapToInt(m -> m.content().split(" ", -1).length - 1 + 5).sum() + 3;

  @Test
  void sameSeedGivesTheSameSessions() {
    Workload a = SeedWorkload.generate(SeedWorkloadConfig.defaults(), WORDS, COUNTER);
    Workload b = SeedWorkload.generate(SeedWorkloadConfig.defaults(), WORDS, COUNTER);
    assertThat(a).isEqualTo(b);
  }

  @Test
  void anotherSeedGivesOtherSessions() {
    Workload a = SeedWorkload.generate(SeedWorkloadConfig.defaults(), WORDS, COUNTER);
    Workload b = SeedWorkload.generate(SeedWorkloadConfig.defaults().withSeed(7), WORDS, COUNTER);
    assertThat(a.sessions()).isNotEqualTo(b.sessions());
  }

  @Test
  void defaultsMatchTheExplainersScenario() {
    SeedWorkloadConfig c = SeedWorkloadConfig.defaults();
    Workload w = SeedWorkload.generate(c, WORDS, COUNTER);

    assertThat(w.sessions()).hasSize(128);
    assertThat(w.fleet().replicas()).isEqualTo(8);
    assertThat(w.sessions()).allSatisfy(s -> {
      assertThat(s.startSeconds()).isBetween(0.0, 10.0);
      assertThat(s.turns().size()).isBetween(3, 30);
      for (Turn t : s.turns()) {
        assertThat(t.userText().split(" ", -1).length - 1).isEqualTo(t.userTokens());
      }
    });
    double meanFirst = w.sessions().stream().mapToInt(s -> s.turns().get(0).userTokens()).average().orElseThrow();
    assertThat(meanFirst).isBetween(14_000 * 0.85, 14_000 * 1.15);
    double meanLater = later(w).mapToInt(Turn::userTokens).average().orElseThrow();
    assertThat(meanLater).isBetween(300 * 0.9, 300 * 1.1);
    double meanReply = w.sessions().stream().flatMap(s -> s.turns().stream()).mapToInt(Turn::replyTokens).average().orElseThrow();
    assertThat(meanReply).isBetween(200 * 0.9, 200 * 1.1);
    double meanThink = w.sessions().stream().flatMap(s -> s.turns().stream()).mapToDouble(Turn::thinkSeconds).average().orElseThrow();
    assertThat(meanThink).isBetween(5 * 0.9, 5 * 1.1);
    double[] turns = w.sessions().stream().mapToDouble(s -> s.turns().size()).sorted().toArray();
    assertThat(turns[turns.length / 2]).isBetween(7.0, 9.0);
  }

  @Test
  void kvCapacityIsTenMeanFinalHistoriesInWholeBlocks() {
    Workload w = SeedWorkload.generate(SeedWorkloadConfig.defaults(), WORDS, COUNTER);
    long capacity = w.fleet().kvCapacityTokens();
    assertThat(capacity % 16).isZero();
    assertThat((double) capacity).isBetween(10 * w.meanFinalHistoryTokens(), 10 * w.meanFinalHistoryTokens() + 16);

    double expected = w.sessions().stream().mapToDouble(SeedWorkloadTest::finalHistory).average().orElseThrow();
    assertThat(w.meanFinalHistoryTokens()).isCloseTo(expected, org.assertj.core.data.Offset.offset(1e-6));
  }

  @Test
  void theDefaultFleetConstantIsTheGeneratedDefaultWorkloadsFleet() {
    // counted with the prompt tokenizer the demo, the engines and the simulator use
    Workload w = SeedWorkload.generate(
        SeedWorkloadConfig.defaults(), dev.kvroute.core.tokenize.PromptTokenizer.create(Tokenizer.defaultTokenizer()));
    assertThat(SeedWorkload.defaultFleet()).isEqualTo(w.fleet());
    assertThat(SeedWorkload.DEFAULT_KV_CAPACITY_TOKENS).isEqualTo(w.fleet().kvCapacityTokens());
  }

  @Test
  void rejectsBadConfig() {
    assertThatThrownBy(() -> SeedWorkloadConfig.defaults().withFleet(0, 16))
        .hasMessage("replicas: 0.0 (expected: > 0)");
  }

  /** Final history as the generator defines it: last prompt (template included) plus last reply. */
  private static double finalHistory(Session s) {
    int words = 0;
    for (Turn t : s.turns()) {
      words += t.userTokens();
    }
    for (int i = 0; i < s.turns().size() - 1; i++) {
      words += s.turns().get(i).replyTokens();
    }
    int messages = 2 * s.turns().size() - 1;
    return words + 5 * messages + 3 + s.turns().get(s.turns().size() - 1).replyTokens();
  }

  private static java.util.stream.Stream<Turn> later(Workload w) {
    return w.sessions().stream().flatMap(s -> s.turns().stream().skip(1));
  }
}
