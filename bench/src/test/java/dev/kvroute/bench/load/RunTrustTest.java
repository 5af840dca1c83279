package dev.kvroute.bench.load;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RunTrustTest {
  @Test
  void aRunWhoseLagsStayWithinTheBoundIsTrustworthyAndKeepsItsScale() {
    RunTrust t = new RunTrust(5, 0.01, 0.02, 0.05, 0.1);
    assertThat(t.trustworthy()).isTrue();
    assertThat(t.suggestedTimeScale()).isEqualTo(5);
    assertThat(t.describe("cache-aware")).contains("kept up").doesNotContain("NOT TRUSTWORTHY");
  }

  @Test
  void theWorstLagDecidesAndTheSuggestionScalesKDownToAStep() {
    // the router and client path took 0.3 model s at K = 5: 3x the bound, so K 5 / 3 = 1.67 -> 1.5
    RunTrust t = new RunTrust(5, 0.01, 0.02, 0.3, 0.1);
    assertThat(t.trustworthy()).isFalse();
    assertThat(t.worstLagSeconds()).isEqualTo(0.3);
    assertThat(t.suggestedTimeScale()).isEqualTo(1.5);
    assertThat(t.describe("round-robin"))
        .startsWith("round-robin: clock lag at K = 5")
        .contains("NOT TRUSTWORTHY")
        .contains("--time-scale 1.5 or lower");
  }

  @Test
  void engineLagBeyondTheLastBucketIsNotTrustworthy() {
    RunTrust t = new RunTrust(8, Double.POSITIVE_INFINITY, 0, 0, 0.1);
    assertThat(t.trustworthy()).isFalse();
    assertThat(t.suggestedTimeScale()).isEqualTo(0.25);
    assertThat(t.describe("x")).contains("engines p99 > 10");
  }

  @Test
  void unknownLagsOfARealFleetAreLeftOut() {
    RunTrust t = new RunTrust(1, Double.NaN, 0.004, Double.NaN, 0.1);
    assertThat(t.trustworthy()).isTrue();
    assertThat(t.describe("target")).contains("n/a (not a mock engine)");
  }
}
