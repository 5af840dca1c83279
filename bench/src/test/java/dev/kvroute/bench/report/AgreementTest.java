package dev.kvroute.bench.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

import java.util.List;
import org.junit.jupiter.api.Test;

class AgreementTest {
  private static PolicyFigures f(double hit, double ttft, List<Double> prefill) {
    return PolicyFigures.of("p", 10, hit, ttft, ttft * 2, prefill);
  }

  @Test
  void comparesOneRunWithOnePrediction() {
    Agreement a = Agreement.of(f(0.40, 1.15, List.of(1.0, 1.0)), f(0.42, 1.0, List.of(1.0, 3.0)));
    assertThat(a.hitRatePoints()).isCloseTo(-2, offset(1e-9));
    assertThat(a.meanTtftRelative()).isCloseTo(0.15, offset(1e-9));
    assertThat(a.busiestDelta()).isCloseTo(-0.5, offset(1e-9));
    assertThat(a.within()).isFalse();
    assertThat(Agreement.of(f(0.40, 1.1, List.of(1.0)), f(0.42, 1.0, List.of(1.0))).within()).isTrue();
  }

  @Test
  void aFigureInsideThePredictedRangeAgreesExactly() {
    List<PolicyFigures> sims = List.of(f(0.05, 1.0, List.of(1.0, 1.0)), f(0.11, 1.4, List.of(1.0, 1.4)));
    Agreement inside = Agreement.ofRange(f(0.08, 1.2, List.of(1.0, 1.2)), sims);
    assertThat(inside).isEqualTo(new Agreement("p", 0, 0, 0));

    Agreement above = Agreement.ofRange(f(0.15, 1.75, List.of(1.0, 1.0)), sims);
    assertThat(above.hitRatePoints()).isCloseTo(4, offset(1e-9));
    assertThat(above.meanTtftRelative()).isCloseTo(0.25, offset(1e-9));
    assertThat(above.within()).isFalse();

    Agreement below = Agreement.ofRange(f(0.03, 0.9, List.of(1.0, 1.0)), sims);
    assertThat(below.hitRatePoints()).isCloseTo(-2, offset(1e-9));
    assertThat(below.meanTtftRelative()).isCloseTo(-0.1, offset(1e-9));
    assertThat(below.within()).isTrue();
    assertThatThrownBy(() -> Agreement.ofRange(f(0, 1, List.of()), List.of()))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
