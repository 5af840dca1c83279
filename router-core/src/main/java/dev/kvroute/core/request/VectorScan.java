package dev.kvroute.core.request;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The string scan's skip over plain bytes ({@link ChatBodyScanner#skipPlain}) with the JDK's Vector
 * API ({@code jdk.incubator.vector}): one vector of the machine's preferred width (32 bytes with
 * AVX2) tested a step, where the portable version tests 32 bytes as four words with SWAR arithmetic.
 * A byte is special if it is a quote, a backslash, below 0x20 or above 0x7F, the set {@link
 * JsonStrings#HIGHS} flags: the last two are one signed comparison, bytes from 0x80 up being
 * negative. About six times the portable version's speed on a 22 KB body in the CPU cache
 * ({@code docs/performance.md}, "The string scan with the Vector API").
 *
 * <p>Loaded only when the JVM resolves the incubator module ({@code --add-modules
 * jdk.incubator.vector}, as the launcher, the image and the tests run it): {@link
 * ChatBodyScanner} decides that before it touches this class. Stateless and thread-safe.
 */
final class VectorScan {
  private static final VectorSpecies<Byte> SPECIES = ByteVector.SPECIES_PREFERRED;

  private VectorScan() {}

  /** Whether vectors are worth it here: at least 16 bytes wide (else the portable scan is used). */
  static boolean useful() {
    return SPECIES.vectorByteSize() >= 16;
  }

  /** Bytes tested a step: the preferred vector's width. */
  static int step() {
    return SPECIES.vectorByteSize();
  }

  /**
   * From {@code p}, whole steps while they hold no special byte: returns the start of the first
   * step that holds one, or the first {@code q} with fewer than {@link #step()} bytes left before
   * {@code end}. {@code 0 <= p <= end <= b.length}.
   */
  static int skipPlain(byte[] b, int p, int end) {
    int step = SPECIES.vectorByteSize();
    while (p + step <= end) {
      ByteVector v = ByteVector.fromArray(SPECIES, b, p);
      if (v.compare(VectorOperators.EQ, (byte) '"')
          .or(v.compare(VectorOperators.EQ, (byte) '\\'))
          .or(v.compare(VectorOperators.LT, (byte) 0x20))
          .anyTrue()) {
        return p;
      }
      p += step;
    }
    return p;
  }
}
