package dev.kvroute.bench.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

import java.util.List;
import org.junit.jupiter.api.Test;

class FiguresRecorderTest {
  @Test
  void computesTheExplainersFigures() {
    FiguresRecorder r = new FiguresRecorder();
    for (int i = 1; i <= 100; i++) {
      r.record(1000, i % 2 == 0 ? 500 : 0, i / 100.0); // 0.01 s .. 1.00 s
    }
    PolicyFigures f = r.figures("p", List.of(10.0, 20.0, 30.0, 60.0));

    assertThat(f.requests()).isEqualTo(100);
    assertThat(f.hitRate()).isEqualTo(0.25);
    assertThat(f.meanTtftSeconds()).isCloseTo(0.505, offset(1e-9));
    assertThat(f.p90TtftSeconds()).isCloseTo(0.90, offset(0.001));
    assertThat(f.fleetPrefillSeconds()).isEqualTo(120.0);
    assertThat(f.busiestOverMean()).isEqualTo(2.0);
  }

  @Test
  void anIdleFleetHasNoImbalance() {
    assertThat(PolicyFigures.of("p", 0, 0, 0, 0, List.of(0.0, 0.0)).busiestOverMean()).isZero();
  }

  @Test
  void rejectsMoreCachedThanPromptTokens() {
    assertThatThrownBy(() -> new FiguresRecorder().record(10, 11, 0.1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("cached 11");
  }
}
