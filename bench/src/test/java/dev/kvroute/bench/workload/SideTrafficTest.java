package dev.kvroute.bench.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SideTrafficTest {
  private static final PromptTokenizer TOKENIZER = PromptTokenizer.create(Tokenizer.defaultTokenizer());
  private static final SeedWorkloadConfig SMALL = SeedWorkloadConfig.defaults().withFleet(4, 3);

  @Test
  void sideSessionsFollowTheRoutedOnesAndSpreadOverTheEngines() {
    Workload routed = SeedWorkload.generate(SMALL, TOKENIZER);
    SideTraffic t = SideTraffic.of(routed, SMALL, 0.5, TOKENIZER);

    assertThat(t.routedSessions()).isEqualTo(12);
    assertThat(t.sideSessions()).isEqualTo(6);
    assertThat(t.workload().sessions().subList(0, 12)).isEqualTo(routed.sessions());
    assertThat(t.workload().fleet()).isEqualTo(routed.fleet());
    assertThat(t.routedRequests()).isEqualTo(routed.requests());
    int[] perEngine = new int[4];
    Set<String> firstMessages = new HashSet<>();
    for (Session s : routed.sessions()) {
      firstMessages.add(s.turns().get(0).userText());
    }
    for (int i = 0; i < t.workload().sessions().size(); i++) {
      Session s = t.workload().sessions().get(i);
      assertThat(s.index()).isEqualTo(i);
      if (i < 12) {
        assertThat(t.routed(i)).isTrue();
        assertThat(t.engineOf(i)).isEqualTo(-1);
      } else {
        assertThat(t.routed(i)).isFalse();
        assertThat(s.key()).isEqualTo(String.format("side-%04d", i - 12));
        assertThat(firstMessages).as("a side session's text is its own").doesNotContain(s.turns().get(0).userText());
        assertThat(s.turns()).as("one-shot").hasSize(1);
        assertThat(s.startSeconds()).isBetween(0.0, SideTraffic.WINDOW_SECONDS);
        perEngine[t.engineOf(i)]++;
      }
    }
    assertThat(perEngine).containsExactly(2, 2, 1, 1);
  }

  @Test
  void noShareIsNoSideTrafficAndAShareOutOfRangeIsRefused() {
    Workload routed = SeedWorkload.generate(SMALL, TOKENIZER);
    SideTraffic none = SideTraffic.of(routed, SMALL, 0, TOKENIZER);
    assertThat(none.sideSessions()).isZero();
    assertThat(none.workload()).isSameAs(routed);
    assertThatThrownBy(() -> SideTraffic.of(routed, SMALL, -0.5, TOKENIZER))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("expected: 0..4");
    assertThatThrownBy(() -> SideTraffic.of(routed, SMALL, Double.NaN, TOKENIZER))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
