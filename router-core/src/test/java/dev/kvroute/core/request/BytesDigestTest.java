package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.math.BigInteger;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@link BytesDigest} against its definition written out plainly (bytes one by one, the polynomial in
 * {@link BigInteger}), on the path this JVM takes and, where 512-bit vectors are usable, on both
 * paths; and the properties the kept prompts rely on. The module's build runs it once more with the
 * portable path ({@code -Dkvroute.vectorScan=false}).
 */
final class BytesDigestTest {
  private static final BigInteger P = BigInteger.valueOf(BytesDigest.P);

  /** The class comment's definition, one byte and one coefficient at a time. */
  private static BytesDigest reference(byte[] b, int from, int to) {
    BigInteger h0 = BigInteger.ZERO;
    BigInteger h1 = BigInteger.ZERO;
    BigInteger r0 = BigInteger.valueOf(BytesDigest.R0);
    BigInteger r1 = BigInteger.valueOf(BytesDigest.R1);
    BigInteger two64 = BigInteger.ONE.shiftLeft(64);
    for (int block = from; block < to; block += BytesDigest.BLOCK_BYTES) {
      int n = Math.min(to - block, BytesDigest.BLOCK_BYTES);
      int padded = (n + 7) / 8 * 8;
      long[] words = new long[padded / 4];
      for (int i = 0; i < n; i++) {
        words[i / 4] |= (b[block + i] & 0xFFL) << (8 * (i % 4));
      }
      BigInteger[] y = {BigInteger.ZERO, BigInteger.ZERO};
      for (int t = 0; t < 2; t++) {
        for (int i = 0; i < words.length; i += 2) {
          long k0 = BytesDigest.KEY[i + 4 * t] & 0xFFFFFFFFL;
          long k1 = BytesDigest.KEY[i + 1 + 4 * t] & 0xFFFFFFFFL;
          BigInteger a = BigInteger.valueOf((words[i] + k0) % (1L << 32));
          BigInteger c = BigInteger.valueOf((words[i + 1] + k1) % (1L << 32));
          y[t] = y[t].add(a.multiply(c)).mod(two64);
        }
      }
      BigInteger mask = BigInteger.valueOf(0xFFFFFFFFL);
      h0 = h0.multiply(r0).add(y[0].and(mask)).mod(P).multiply(r0).add(y[0].shiftRight(32)).mod(P);
      h1 = h1.multiply(r1).add(y[1].and(mask)).mod(P).multiply(r1).add(y[1].shiftRight(32)).mod(P);
    }
    BigInteger length = BigInteger.valueOf(to - from);
    return new BytesDigest(h0.multiply(r0).add(length).mod(P).longValueExact(),
        h1.multiply(r1).add(length).mod(P).longValueExact());
  }

  private static byte[] random(Random r, int n) {
    byte[] b = new byte[n];
    r.nextBytes(b);
    return b;
  }

  @Test
  void theDigestIsItsDefinition() {
    Random r = new Random(1);
    for (int n : new int[] {0, 1, 3, 4, 7, 8, 9, 63, 64, 65, 127, 1023, 1024, 1025, 2047, 2048, 2049, 5000, 22_000}) {
      for (int trial = 0; trial < 3; trial++) {
        byte[] b = random(r, n + 40);
        int from = r.nextInt(33);
        assertThat(BytesDigest.of(b, from, from + n)).as("%d bytes from %d", n, from).isEqualTo(reference(b, from, from + n));
      }
    }
  }

  @Test
  void theVectorPathAndThePortablePathAgree() {
    assumeThat(BytesDigest.FAST).as("512-bit vectors usable here").isTrue();
    Random r = new Random(2);
    for (int n = 0; n < 2200; n += 1 + r.nextInt(13)) {
      byte[] b = random(r, n + 70);
      int from = r.nextInt(65);
      assertThat(BytesDigest.of(b, from, from + n, true)).as("%d bytes from %d", n, from)
          .isEqualTo(BytesDigest.of(b, from, from + n, false));
    }
  }

  @Test
  void equalBytesAnywhereDigestAlikeAndAnyChangeOrLengthDiffers() {
    Random r = new Random(3);
    byte[] text = random(r, 3000);
    byte[] elsewhere = new byte[3100];
    System.arraycopy(text, 0, elsewhere, 77, text.length);
    BytesDigest d = BytesDigest.of(text, 0, text.length);
    assertThat(BytesDigest.of(elsewhere, 77, 77 + text.length)).isEqualTo(d);
    Set<BytesDigest> seen = new HashSet<>();
    seen.add(d);
    for (int i = 0; i < text.length; i += 1 + r.nextInt(7)) {
      byte[] changed = text.clone();
      changed[i] ^= (byte) (1 << r.nextInt(8));
      assertThat(seen.add(BytesDigest.of(changed, 0, changed.length))).as("byte %d changed", i).isTrue();
    }
    // a zero byte more, or one less: the padding is the same, the length is not
    byte[] zeroMore = java.util.Arrays.copyOf(text, text.length + 1);
    assertThat(BytesDigest.of(zeroMore, 0, zeroMore.length)).isNotEqualTo(d);
    byte[] zeros = new byte[16];
    assertThat(BytesDigest.of(zeros, 0, 5)).isNotEqualTo(BytesDigest.of(zeros, 0, 6));
    // two words swapped within a pair, and two pairs swapped: NH's pairing and order both count
    byte[] swapped = text.clone();
    System.arraycopy(text, 4, swapped, 0, 4);
    System.arraycopy(text, 0, swapped, 4, 4);
    assertThat(BytesDigest.of(swapped, 0, swapped.length)).isNotEqualTo(d);
    byte[] pairs = text.clone();
    System.arraycopy(text, 8, pairs, 0, 8);
    System.arraycopy(text, 0, pairs, 8, 8);
    assertThat(BytesDigest.of(pairs, 0, pairs.length)).isNotEqualTo(d);
  }

  @Test
  void aRangeOutsideTheArrayIsRefused() {
    byte[] b = new byte[8];
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> BytesDigest.of(b, 4, 9))
        .isInstanceOf(IndexOutOfBoundsException.class);
  }
}
