package dev.kvroute.bench.cli;


/** Reads a {@code --time-scale} value: a positive number, or {@code auto}. */
final class TimeScales {
  private TimeScales() {}

  /**
   * The value of {@code text}: a positive number of model seconds per wall second, or NaN for {@code
   * auto}.
   *
   * @throws IllegalArgumentException naming {@code flag} and what was expected, for anything else
   */
  static double parse(String text, String flag) {
    if (text.equalsIgnoreCase("auto")) {
      return Double.NaN;
    }
    double k;
    try {
      k = Double.parseDouble(text);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + ": " + text + " (expected: a number > 0, or auto)");
    }
    if (!(k > 0) || Double.isInfinite(k)) {
      throw new IllegalArgumentException(flag + ": " + text + " (expected: a number > 0, or auto)");
    }
    return k;
  }
}
