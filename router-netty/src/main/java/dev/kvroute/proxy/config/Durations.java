package dev.kvroute.proxy.config;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;

/**
 * Parses and formats the human-readable durations of the configuration: a whole number followed by a
 * unit ({@code 250ms}, {@code 5s}, {@code 2m}, {@code 1h}, {@code 1d}; also {@code ns} and {@code us}),
 * or an ISO-8601 duration ({@code PT5S}). A bare number is rejected because its unit would be a guess.
 *
 * <p>Stateless and thread-safe.
 */
public final class Durations {
  private Durations() {}

  /**
   * Parses {@code text}.
   *
   * @throws IllegalArgumentException naming the text and the expected forms when it is not a duration
   */
  public static Duration parse(String text) {
    String s = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
    if (s.startsWith("pt") || s.startsWith("p")) {
      try {
        return Duration.parse(s.toUpperCase(Locale.ROOT));
      } catch (DateTimeParseException e) {
        throw invalid(text);
      }
    }
    int i = 0;
    if (i < s.length() && s.charAt(i) == '-') {
      i++;
    }
    int digitsStart = i;
    while (i < s.length() && Character.isDigit(s.charAt(i))) {
      i++;
    }
    if (i == digitsStart) {
      throw invalid(text);
    }
    long amount;
    try {
      amount = Long.parseLong(s.substring(0, i));
    } catch (NumberFormatException e) {
      throw invalid(text);
    }
    String unit = s.substring(i).trim();
    switch (unit) {
      case "ns":
        return Duration.ofNanos(amount);
      case "us":
        return Duration.ofNanos(Math.multiplyExact(amount, 1000L));
      case "ms":
        return Duration.ofMillis(amount);
      case "s":
        return Duration.ofSeconds(amount);
      case "m":
        return Duration.ofMinutes(amount);
      case "h":
        return Duration.ofHours(amount);
      case "d":
        return Duration.ofDays(amount);
      default:
        throw invalid(text);
    }
  }

  /** Formats {@code d} in the largest unit that represents it exactly, e.g. {@code 1500ms}, {@code 2m}. */
  public static String format(Duration d) {
    long nanos;
    try {
      nanos = d.toNanos();
    } catch (ArithmeticException e) {
      return d.toString();
    }
    if (nanos == 0) {
      return "0s";
    }
    long[] factors = {86_400_000_000_000L, 3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L, 1_000_000L, 1_000L, 1L};
    String[] units = {"d", "h", "m", "s", "ms", "us", "ns"};
    for (int k = 0; k < factors.length; k++) {
      if (nanos % factors[k] == 0) {
        return (nanos / factors[k]) + units[k];
      }
    }
    return nanos + "ns";
  }

  private static IllegalArgumentException invalid(String text) {
    return new IllegalArgumentException(
        "\"" + text + "\" (expected: a duration such as 250ms, 5s, 2m, 1h or PT5S)");
  }
}
