package dev.kvroute.proxy.config;

import java.time.Duration;

/**
 * Argument checks for the configuration records. Every failure names the option, shows the bad value
 * and says what was expected: {@code connect: PT-1S (expected: > 0)}.
 */
final class Checks {
  private Checks() {}

  static int positive(String name, int value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
    }
    return value;
  }

  static long positive(String name, long value) {
    if (value <= 0) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
    }
    return value;
  }

  static int nonNegative(String name, int value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: >= 0)");
    }
    return value;
  }

  static long nonNegative(String name, long value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: >= 0)");
    }
    return value;
  }

  static double nonNegative(String name, double value) {
    if (!(value >= 0) || Double.isInfinite(value)) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: a finite number >= 0)");
    }
    return value;
  }

  static int port(String name, int value, boolean allowDisabled) {
    int min = allowDisabled ? -1 : 0;
    if (value < min || value > 65535) {
      String expected = allowDisabled ? "-1 (disabled), 0 (ephemeral) or 1..65535" : "0 (ephemeral) or 1..65535";
      throw new IllegalArgumentException(name + ": " + value + " (expected: " + expected + ")");
    }
    return value;
  }

  static int range(String name, int value, int min, int max) {
    if (value < min || value > max) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: " + min + ".." + max + ")");
    }
    return value;
  }

  static Duration positive(String name, Duration value) {
    if (value == null) {
      throw new IllegalArgumentException(name + ": null (expected: a duration such as 5s)");
    }
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + ": " + Durations.format(value) + " (expected: > 0)");
    }
    return value;
  }

  static String nonBlank(String name, String value) {
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException(name + ": " + (value == null ? "null" : "\"" + value + "\"") + " (expected: a non-blank string)");
    }
    return value;
  }

  static <T> T notNull(String name, T value, String expected) {
    if (value == null) {
      throw new IllegalArgumentException(name + ": null (expected: " + expected + ")");
    }
    return value;
  }
}
