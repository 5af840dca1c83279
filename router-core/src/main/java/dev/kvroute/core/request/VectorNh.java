package dev.kvroute.core.request;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.LongVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link BytesDigest}'s NH sums on 512-bit vectors ({@code jdk.incubator.vector}): sixteen words a
 * step, each adjacent pair's keyed product in one 64-bit lane, for both instances. Loaded only where
 * {@link ChatBodyScanner#VECTOR} says the JVM resolved the module and C2 compiles it. Stateless and
 * thread-safe.
 */
final class VectorNh {
  private static final VectorSpecies<Byte> BYTES = ByteVector.SPECIES_512;
  private static final VectorSpecies<Integer> INTS = IntVector.SPECIES_512;
  private static final int STEP = 64;

  private VectorNh() {}

  /**
   * Whether the machine's preferred vectors are 512 bits wide (AVX-512, where a 64-bit lane multiply
   * is one instruction; narrower vectors emulate it at several times the cost).
   */
  static boolean useful() {
    return LongVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
  }

  /**
   * Sets {@code y[0]} and {@code y[1]} to the two instances' NH sums over the whole 64-byte steps of
   * the block {@code b[block, end)} ({@code end - block <= BLOCK_BYTES}); returns where the steps end.
   */
  static int sums(byte[] b, int block, int end, long[] y) {
    LongVector y0 = LongVector.zero(LongVector.SPECIES_512);
    LongVector y1 = y0;
    int k = 0;
    int p = block;
    for (; p + STEP <= end; p += STEP, k += 16) {
      IntVector m = ByteVector.fromArray(BYTES, b, p).reinterpretAsInts();
      LongVector s0 = m.add(IntVector.fromArray(INTS, BytesDigest.KEY, k)).reinterpretAsLongs();
      LongVector s1 = m.add(IntVector.fromArray(INTS, BytesDigest.KEY, k + BytesDigest.SHIFT)).reinterpretAsLongs();
      // each lane: (low word + key) * (high word + key), both as unsigned 32-bit values
      y0 = y0.add(s0.and(0xFFFFFFFFL).mul(s0.lanewise(VectorOperators.LSHR, 32)));
      y1 = y1.add(s1.and(0xFFFFFFFFL).mul(s1.lanewise(VectorOperators.LSHR, 32)));
    }
    y[0] = y0.reduceLanes(VectorOperators.ADD);
    y[1] = y1.reduceLanes(VectorOperators.ADD);
    return p;
  }
}
