package dev.kvroute.proxy;

import dev.kvroute.core.Ticker;
import dev.kvroute.proxy.config.CircuitBreakerConfig;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;

/**
 * One backend's circuit breaker. Counts connection failures, timeouts and 5xx answers; the proxy
 * never reports a 4xx to it.
 *
 * <pre>
 *   CLOSED --failureThreshold consecutive failures--> OPEN
 *   OPEN   --openDuration elapsed (checked on use)-->  HALF_OPEN
 *   HALF_OPEN --successThreshold consecutive successes--> CLOSED
 *   HALF_OPEN --any failure--> OPEN
 * </pre>
 *
 * <p>Thread-safe: outcomes arrive from every event loop; methods are synchronized (a few field
 * updates each).
 */
final class CircuitBreaker {
  /** Breaker states; {@link #code()} is the value of the {@code kvroute.circuit.state} gauge. */
  enum State {
    CLOSED(0),
    OPEN(1),
    HALF_OPEN(2);

    private final int code;

    State(int code) {
      this.code = code;
    }

    int code() {
      return code;
    }
  }

  private final CircuitBreakerConfig config;
  private final Ticker ticker;
  private final BiConsumer<State, State> onTransition;
  private final BooleanSupplier mayOpen;
  private State state = State.CLOSED;
  private int consecutiveFailures;
  private int consecutiveSuccesses;
  private long openedAtNanos;

  /**
   * @param onTransition called with (from, to) on every state change, under the breaker's lock
   */
  CircuitBreaker(CircuitBreakerConfig config, Ticker ticker, BiConsumer<State, State> onTransition) {
    this(config, ticker, onTransition, () -> true);
  }

  /**
   * @param mayOpen asked before the circuit opens; {@code false} keeps it closed (or half-open), so
   *     that no more than the configured share of the backends is ejected. A {@code true} answer
   *     reserves an ejection slot, which the owner frees on the transition out of OPEN. Must not call
   *     back into this breaker.
   */
  CircuitBreaker(CircuitBreakerConfig config, Ticker ticker, BiConsumer<State, State> onTransition, BooleanSupplier mayOpen) {
    this.config = config;
    this.ticker = ticker;
    this.onTransition = onTransition;
    this.mayOpen = mayOpen;
  }

  /** Whether a request may be sent now; moves OPEN to HALF_OPEN once the open duration is over. */
  synchronized boolean allowsRequest() {
    if (state == State.OPEN && ticker.nanos() - openedAtNanos >= config.openDuration().toNanos()) {
      moveTo(State.HALF_OPEN);
    }
    return state != State.OPEN;
  }

  /** Records a request the backend served (any status below 500). */
  synchronized void onSuccess() {
    consecutiveFailures = 0;
    if (state == State.HALF_OPEN && ++consecutiveSuccesses >= config.successThreshold()) {
      moveTo(State.CLOSED);
    }
  }

  /** Records a connection failure, timeout or 5xx answer. */
  synchronized void onFailure() {
    if (!config.enabled()) {
      return;
    }
    consecutiveSuccesses = 0;
    if (state == State.HALF_OPEN) {
      open();
    } else if (state == State.CLOSED && ++consecutiveFailures >= config.failureThreshold()) {
      open();
    }
  }

  synchronized State state() {
    return state;
  }

  private void open() {
    if (!mayOpen.getAsBoolean()) {
      // too many backends are ejected already: stay in rotation (Envoy's max_ejection_percent)
      consecutiveFailures = 0;
      return;
    }
    openedAtNanos = ticker.nanos();
    moveTo(State.OPEN);
  }

  private void moveTo(State next) {
    State prev = state;
    state = next;
    consecutiveFailures = 0;
    consecutiveSuccesses = 0;
    if (prev != next) {
      onTransition.accept(prev, next);
    }
  }
}
