package dev.kvroute.bench.trace;

import java.util.Locale;

/**
 * How the requests of one of the trace's arrival buckets are sent. Mooncake's timestamps come in
 * 3-second buckets (every timestamp is a multiple of 3 s, give or take a millisecond), so up to a few
 * dozen requests share one timestamp.
 */
public enum Arrivals {
  /** Every request at its bucket's timestamp: bursts, as the trace literally says. */
  BURST,
  /**
   * Each request at its timestamp plus a uniform offset in {@code [0, bucket)}, drawn from a seeded
   * generator: the bucket's requests spread over it, as they presumably arrived.
   */
  JITTER;

  /** The command-line name: {@code burst} or {@code jitter}. */
  public String cliName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The mode named {@code name} (case-insensitive).
   *
   * @throws IllegalArgumentException for any other name
   */
  public static Arrivals fromCliName(String name) {
    for (Arrivals a : values()) {
      if (a.name().equalsIgnoreCase(name)) {
        return a;
      }
    }
    throw new IllegalArgumentException("arrivals: " + name + " (expected: burst or jitter)");
  }
}
