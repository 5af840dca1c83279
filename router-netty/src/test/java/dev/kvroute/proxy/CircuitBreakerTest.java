package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.proxy.config.CircuitBreakerConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

final class CircuitBreakerTest {
  long now;
  final List<String> transitions = new ArrayList<>();
  final CircuitBreaker cb = new CircuitBreaker(new CircuitBreakerConfig(true, 3, Duration.ofSeconds(10), 2),
      () -> now, (from, to) -> transitions.add(from + ">" + to));

  @Test
  void opensAfterConsecutiveFailuresOnly() {
    cb.onFailure();
    cb.onFailure();
    cb.onSuccess();
    cb.onFailure();
    cb.onFailure();
    assertThat(cb.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    cb.onFailure();
    assertThat(cb.state()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThat(cb.allowsRequest()).isFalse();
  }

  @Test
  void halfOpensAfterTheOpenDurationAndClosesAfterSuccesses() {
    for (int i = 0; i < 3; i++) {
      cb.onFailure();
    }
    now += Duration.ofSeconds(10).toNanos() - 1;
    assertThat(cb.allowsRequest()).isFalse();
    now += 1;
    assertThat(cb.allowsRequest()).isTrue();
    assertThat(cb.state()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
    cb.onSuccess();
    assertThat(cb.state()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
    cb.onSuccess();
    assertThat(cb.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(transitions).containsExactly("CLOSED>OPEN", "OPEN>HALF_OPEN", "HALF_OPEN>CLOSED");
  }

  @Test
  void aFailureWhileHalfOpenReopens() {
    for (int i = 0; i < 3; i++) {
      cb.onFailure();
    }
    now += Duration.ofSeconds(10).toNanos();
    assertThat(cb.allowsRequest()).isTrue();
    cb.onFailure();
    assertThat(cb.state()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThat(cb.allowsRequest()).isFalse();
  }

  @Test
  void disabledNeverOpens() {
    CircuitBreaker off = new CircuitBreaker(new CircuitBreakerConfig(false, 1, Duration.ofSeconds(1), 1), () -> 0, (a, b) -> {});
    for (int i = 0; i < 10; i++) {
      off.onFailure();
    }
    assertThat(off.allowsRequest()).isTrue();
  }

  @Test
  void aCircuitRefusedAnEjectionSlotStaysClosedAndAsksAgainAtTheNextThreshold() {
    List<Boolean> answers = new ArrayList<>(List.of(false, true));
    int[] asked = {0};
    CircuitBreaker capped = new CircuitBreaker(new CircuitBreakerConfig(true, 2, Duration.ofSeconds(10), 1),
        () -> now, (from, to) -> transitions.add(from + ">" + to), () -> {
          asked[0]++;
          return answers.remove(0);
        });
    capped.onFailure();
    capped.onFailure();
    assertThat(capped.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(capped.allowsRequest()).isTrue();
    capped.onFailure();
    assertThat(asked[0]).as("counting starts again after a refusal").isEqualTo(1);
    capped.onFailure();
    assertThat(asked[0]).isEqualTo(2);
    assertThat(capped.state()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThat(transitions).containsExactly("CLOSED>OPEN");
  }
}
