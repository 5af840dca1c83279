package dev.kvroute.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class MooncakeWorkloadTest {
  static final BlockTokens BLOCKS = new BlockTokens(new int[] {11, 12, 13}, 1);

  /** Ten requests, two per 3-second bucket from 60 s on; request i has ids [0, 100 + i / 2]. */
  static MooncakeTrace trace() {
    List<MooncakeRequest> rs = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      rs.add(new MooncakeRequest(i + 1, 60_000 + (i / 2) * 3_000L, 600, 5 + i, new int[] {0, 100 + i / 2}));
    }
    return MooncakeTrace.of("t.jsonl", rs);
  }

  @Test
  void burstArrivalsAreTheTimestampsFromTheSliceStartOverTheMultiplier() {
    MooncakeConfig c = MooncakeConfig.defaults().withSlice(1, 2).withArrivals(Arrivals.BURST).withRateMultiplier(2);
    MooncakeWorkload w = MooncakeWorkload.create(trace(), c, BLOCKS);
    assertThat(w.size()).isEqualTo(10);
    for (int i = 0; i < 10; i++) {
      assertThat(w.arrivalSeconds(i)).isEqualTo((i / 2) * 3 / 2.0);
      assertThat(w.request(i).line()).isEqualTo(i + 1);
      assertThat(w.maxTokens(i)).isEqualTo(5 + i);
      assertThat(w.promptTokens(i)).hasSize(600);
    }
    assertThat(w.spanSeconds()).isEqualTo(30);
  }

  @Test
  void jitterSpreadsEachBucketOverItsThreeSecondsInOrderAndRepeatably() {
    MooncakeConfig c = MooncakeConfig.defaults().withSlice(1, 2).withRateMultiplier(2);
    MooncakeWorkload w = MooncakeWorkload.create(trace(), c, BLOCKS);
    MooncakeWorkload again = MooncakeWorkload.create(trace(), c, BLOCKS);
    boolean moved = false;
    for (int i = 0; i < w.size(); i++) {
      double bucket = (w.request(i).timestampMillis() - 60_000) / 1000.0;
      assertThat(w.arrivalSeconds(i)).isBetween(bucket / 2, (bucket + 3) / 2);
      assertThat(again.arrivalSeconds(i)).isEqualTo(w.arrivalSeconds(i));
      moved |= w.arrivalSeconds(i) != bucket / 2;
      if (i > 0) {
        assertThat(w.arrivalSeconds(i)).isGreaterThanOrEqualTo(w.arrivalSeconds(i - 1));
      }
    }
    assertThat(moved).isTrue();
  }

  @Test
  void conversationKeysNameTheSecondBlock() {
    MooncakeWorkload w = MooncakeWorkload.create(trace(), MooncakeConfig.defaults(), BLOCKS);
    assertThat(w.sessionKey(0)).isEqualTo("conv-100");
    assertThat(SessionKeys.NONE.keyOf(w.request(0))).isNull();
    assertThat(SessionKeys.CONVERSATION.keyOf(new MooncakeRequest(1, 0, 3, 1, new int[] {7}))).isEqualTo("conv-7");
  }

  @Test
  void aRequestLongerThanTheEnginesAcceptIsAnErrorNamingItsLine() {
    MooncakeConfig small = MooncakeConfig.defaults().withFleet(2, 512);
    assertThatThrownBy(() -> MooncakeWorkload.create(trace(), small, BLOCKS))
        .hasMessageStartingWith("t.jsonl:1: 605 prompt + output tokens (expected: <= the engines' max_model_len 512");
  }

  @Test
  void anEmptySliceIsAnError() {
    MooncakeConfig late = MooncakeConfig.defaults().withSlice(5, 6);
    assertThatThrownBy(() -> MooncakeWorkload.create(trace(), late, BLOCKS))
        .hasMessageContaining("slice: 5..6 minutes of t.jsonl holds no request");
  }
}
