package dev.kvroute.core.request;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.security.SecureRandom;

/**
 * The streaming computation of {@link TextHash}: bytes go in by {@link #update} in any chunking,
 * {@link #finish} gives the hash. A group of 56 bytes (eight 7-byte elements {@code m_0..m_7}) is
 * compressed, for each half with its own eight secret keys, to {@code v = (m_0 + k_0)(m_1 + k_1) +
 * ... + (m_6 + k_6)(m_7 + k_7)} modulo {@code p = 2^61 - 1} (four 64x64->128-bit products), and
 * {@code v} is then one Horner step {@code h = h * r + v} of that half's polynomial at its secret
 * point ({@link #stepA}, {@link #stepB}: five products each). Ten products per 56 bytes, where
 * polynomials over the elements themselves take thirty-two. {@link TextHash} gives the definition
 * and the collision bound.
 *
 * <p>Sums are kept lazily below {@code 2^64} (unsigned) and folded modulo {@code p} once per step;
 * the bounds are on each method.
 *
 * <p>Not thread-safe; reusable after {@link #reset}.
 */
final class PolynomialHasher {
  static final long P = (1L << 61) - 1;
  private static final long M56 = (1L << 56) - 1;
  private static final int GROUP = 56;
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  /**
   * The compressions' keys, in {@code [0, p)} ({@code K0..K7} the first half's, {@code L0..L7} the
   * second's), and the two halves' points, in {@code [1, p)}: drawn once per JVM from {@link
   * SecureRandom}, uniformly and independently. Package-private for the test that checks against a
   * naive evaluation of the definition.
   */
  static final long K0;

  static final long K1;
  static final long K2;
  static final long K3;
  static final long K4;
  static final long K5;
  static final long K6;
  static final long K7;
  static final long L0;
  static final long L1;
  static final long L2;
  static final long L3;
  static final long L4;
  static final long L5;
  static final long L6;
  static final long L7;
  static final long A;
  static final long B;

  static {
    SecureRandom random = new SecureRandom();
    K0 = residue(random);
    K1 = residue(random);
    K2 = residue(random);
    K3 = residue(random);
    K4 = residue(random);
    K5 = residue(random);
    K6 = residue(random);
    K7 = residue(random);
    L0 = residue(random);
    L1 = residue(random);
    L2 = residue(random);
    L3 = residue(random);
    L4 = residue(random);
    L5 = residue(random);
    L6 = residue(random);
    L7 = residue(random);
    long a;
    do {
      a = residue(random);
    } while (a == 0);
    A = a;
    long b;
    do {
      b = residue(random);
    } while (b == 0);
    B = b;
  }

  private final byte[] carry = new byte[GROUP + 8];
  private final byte[] scratch = new byte[4];
  private int carried;
  private long length;
  private long ha;
  private long hb;

  /** Forgets everything fed so far. */
  void reset() {
    carried = 0;
    length = 0;
    ha = 0;
    hb = 0;
  }

  /** Feeds one byte. */
  void update(int b) {
    length++;
    carry[carried++] = (byte) b;
    if (carried == GROUP) {
      group(carry, 0);
      carried = 0;
    }
  }

  /** Feeds {@code len} bytes of {@code b} from {@code off}. */
  void update(byte[] b, int off, int len) {
    length += len;
    int end = off + len;
    if (carried > 0) {
      int k = Math.min(len, GROUP - carried);
      System.arraycopy(b, off, carry, carried, k);
      carried += k;
      off += k;
      if (carried < GROUP) {
        return;
      }
      group(carry, 0);
      carried = 0;
    }
    long a = ha;
    long c = hb;
    while (end - off >= GROUP) {
      long e0 = element(b, off);
      long e1 = element(b, off + 7);
      long e2 = element(b, off + 14);
      long e3 = element(b, off + 21);
      long e4 = element(b, off + 28);
      long e5 = element(b, off + 35);
      long e6 = element(b, off + 42);
      long e7 = element(b, off + 49);
      a = stepA(a, e0, e1, e2, e3, e4, e5, e6, e7);
      c = stepB(c, e0, e1, e2, e3, e4, e5, e6, e7);
      off += GROUP;
    }
    ha = a;
    hb = c;
    if (off < end) {
      System.arraycopy(b, off, carry, 0, end - off);
      carried = end - off;
    }
  }

  /** Hashes the 56 bytes at {@code off} into the state. */
  private void group(byte[] b, int off) {
    long e0 = element(b, off);
    long e1 = element(b, off + 7);
    long e2 = element(b, off + 14);
    long e3 = element(b, off + 21);
    long e4 = element(b, off + 28);
    long e5 = element(b, off + 35);
    long e6 = element(b, off + 42);
    long e7 = element(b, off + 49);
    ha = stepA(ha, e0, e1, e2, e3, e4, e5, e6, e7);
    hb = stepB(hb, e0, e1, e2, e3, e4, e5, e6, e7);
  }

  /**
   * The first half's state {@code a} (below {@code 2^61 + 8}, as this returns it; 0 to start)
   * after one more 56-byte group, given as its eight 7-byte little-endian elements (each below
   * {@code 2^56}): {@code a * A + v} modulo {@code p}, below {@code 2^61 + 8}, where {@code v} is
   * the group's compression with the first half's keys, {@code (e0 + K0)(e1 + K1) + (e2 + K2)(e3 +
   * K3) + (e4 + K4)(e5 + K5) + (e6 + K6)(e7 + K7)}. Five 64x64-bit products. For callers that hash
   * while they scan: {@code a = stepA(a, e0..e7)} and {@code c = stepB(c, e0..e7)} per group.
   */
  static long stepA(long a, long e0, long e1, long e2, long e3, long e4, long e5, long e6, long e7) {
    // each factor is below 2^61 + 2^56, each fold below 2^62 + 2^58: two fit, four do not; the
    // compression below 2^63 + 2^61 + 2^59 plus a fold below 2^62 + 8: no unsigned overflow
    long v = reduce(fold(e0 + K0, e1 + K1) + fold(e2 + K2, e3 + K3)) + fold(e4 + K4, e5 + K5)
        + fold(e6 + K6, e7 + K7);
    return reduce(fold(a, A) + v);
  }

  /** As {@link #stepA}, for the second half's state, keys ({@code L0..L7}) and point. */
  static long stepB(long c, long e0, long e1, long e2, long e3, long e4, long e5, long e6, long e7) {
    long v = reduce(fold(e0 + L0, e1 + L1) + fold(e2 + L2, e3 + L3)) + fold(e4 + L4, e5 + L5)
        + fold(e6 + L6, e7 + L7);
    return reduce(fold(c, B) + v);
  }

  /**
   * Takes the state of a hash computed elsewhere by {@link #stepA} and {@link #stepB} from zero over {@code length} bytes (a multiple of 56); {@link #update} and {@link
   * #finish} go on from it.
   *
   * @throws IllegalArgumentException if {@code length} is not a multiple of 56
   */
  void resume(long a, long c, long length) {
    if (length % GROUP != 0) {
      throw new IllegalArgumentException("length: " + length + " (expected: a multiple of 56)");
    }
    carried = 0;
    this.length = length;
    ha = a;
    hb = c;
  }

  /** Feeds the UTF-8 form of {@code codePoint} (a surrogate in its 3-byte form). */
  void updateCodePoint(int codePoint) {
    int n = putUtf8(scratch, 0, codePoint);
    update(scratch, 0, n);
  }

  /**
   * The hash of everything fed since construction or {@link #reset}: the last group padded with
   * zeros, then the length as a last step. Leaves the state as it was.
   */
  TextHash finish() {
    long a = ha;
    long c = hb;
    if (carried > 0) {
      java.util.Arrays.fill(carry, carried, carry.length, (byte) 0);
      long e0 = element(carry, 0);
      long e1 = element(carry, 7);
      long e2 = element(carry, 14);
      long e3 = element(carry, 21);
      long e4 = element(carry, 28);
      long e5 = element(carry, 35);
      long e6 = element(carry, 42);
      long e7 = element(carry, 49);
      a = stepA(a, e0, e1, e2, e3, e4, e5, e6, e7);
      c = stepB(c, e0, e1, e2, e3, e4, e5, e6, e7);
    }
    a = mod(fold(a, A) + length);
    c = mod(fold(c, B) + length);
    return new TextHash(a, c);
  }

  /** Writes the UTF-8 form of {@code codePoint} at {@code at}; returns the index after it. */
  static int putUtf8(byte[] out, int at, int codePoint) {
    if (codePoint < 0x80) {
      out[at++] = (byte) codePoint;
    } else if (codePoint < 0x800) {
      out[at++] = (byte) (0xC0 | (codePoint >> 6));
      out[at++] = (byte) (0x80 | (codePoint & 0x3F));
    } else if (codePoint < 0x10000) {
      out[at++] = (byte) (0xE0 | (codePoint >> 12));
      out[at++] = (byte) (0x80 | ((codePoint >> 6) & 0x3F));
      out[at++] = (byte) (0x80 | (codePoint & 0x3F));
    } else {
      out[at++] = (byte) (0xF0 | (codePoint >> 18));
      out[at++] = (byte) (0x80 | ((codePoint >> 12) & 0x3F));
      out[at++] = (byte) (0x80 | ((codePoint >> 6) & 0x3F));
      out[at++] = (byte) (0x80 | (codePoint & 0x3F));
    }
    return at;
  }

  /** The 7 bytes at {@code q} as a little-endian number below {@code 2^56}. */
  private static long element(byte[] b, int q) {
    if (q + 8 <= b.length) {
      return (long) LONG_LE.get(b, q) & M56;
    }
    return (long) LONG_LE.get(b, q - 1) >>> 8;
  }

  /**
   * A number congruent to {@code x * y} modulo {@code p}: the product's low 61 bits plus the rest
   * shifted down, so below {@code 2^61 + x * y / 2^61}. For {@code x < 2^61 + 8} and {@code y <
   * 2^61} that is below {@code 2^62 + 8}; for both below {@code 2^61 + 2^56}, below {@code 2^62 +
   * 2^58}. Needs {@code x * y < 2^125}.
   */
  private static long fold(long x, long y) {
    long lo = x * y;
    long hi = Math.multiplyHigh(x, y);
    return (lo & P) + ((lo >>> 61) | (hi << 3));
  }

  /** A number congruent to the unsigned {@code x} modulo {@code p}, below {@code 2^61 + 8}. */
  private static long reduce(long x) {
    return (x & P) + (x >>> 61);
  }

  /** The unsigned {@code x} modulo {@code p}. */
  private static long mod(long x) {
    long r = reduce(reduce(x));
    return r >= P ? r - P : r;
  }

  /** A number uniform in {@code [0, p)}: 61 random bits, drawn again on {@code p} itself. */
  private static long residue(SecureRandom random) {
    long x;
    do {
      x = random.nextLong() & P;
    } while (x == P);
    return x;
  }
}
