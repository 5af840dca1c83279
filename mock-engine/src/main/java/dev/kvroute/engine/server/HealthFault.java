package dev.kvroute.engine.server;

import java.util.Locale;

/**
 * How {@code GET /health} (and {@code /ping}) answers, for testing health checkers:
 *
 * <ul>
 *   <li>{@code ok}: 200 with an empty body (vLLM).
 *   <li>{@code fail}: 503 with an empty body (vLLM's answer when the engine is dead); generation still
 *       works.
 *   <li>{@code dead}: 503 on {@code /health}, and 500 {@code InternalServerError} on every generation
 *       request (vLLM's {@code EngineDeadError}).
 *   <li>{@code slow:MS}: 200, after {@code MS} wall-clock milliseconds.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 *
 * @param status HTTP status of {@code /health}
 * @param delayMillis wall-clock delay before answering
 * @param dead whether generation requests fail with 500
 */
public record HealthFault(int status, long delayMillis, boolean dead) {
  /** Healthy. */
  public static final HealthFault OK = new HealthFault(200, 0, false);

  /**
   * Parses {@code ok}, {@code fail}, {@code dead} or {@code slow:MS}.
   *
   * @throws IllegalArgumentException for anything else
   */
  public static HealthFault parse(String spec) {
    String s = spec == null ? "ok" : spec.trim().toLowerCase(Locale.ROOT);
    if (s.isEmpty() || s.equals("ok") || s.equals("none")) {
      return OK;
    }
    if (s.equals("fail")) {
      return new HealthFault(503, 0, false);
    }
    if (s.equals("dead")) {
      return new HealthFault(503, 0, true);
    }
    if (s.startsWith("slow:")) {
      try {
        long ms = Long.parseLong(s.substring(5).trim());
        if (ms >= 0) {
          return new HealthFault(200, ms, false);
        }
      } catch (NumberFormatException e) {
        // reported below
      }
    }
    throw new IllegalArgumentException(
        "health fault: " + spec + " (expected: ok, fail, dead or slow:MS)");
  }

  @Override
  public String toString() {
    if (dead) {
      return "dead";
    }
    if (status != 200) {
      return "fail";
    }
    return delayMillis > 0 ? "slow:" + delayMillis : "ok";
  }
}
