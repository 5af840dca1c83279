package dev.kvroute.core.request;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.security.SecureRandom;

/**
 * The streaming computation of {@link TextHash}: bytes go in by {@link #update} in any chunking,
 * {@link #finish} gives the hash. Four elements (28 bytes) at a time, Horner's rule by {@code r^4}
 * with the products kept below {@code 2^64} and folded modulo {@code 2^61 - 1} once per group.
 *
 * <p>Not thread-safe; reusable after {@link #reset}.
 */
final class PolynomialHasher {
  static final long P = (1L << 61) - 1;
  private static final long M56 = (1L << 56) - 1;
  private static final int GROUP = 28;
  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

  /** The two secret points; package-private for the test that checks against a naive evaluation. */
  static final long A1;

  private static final long A2;
  private static final long A3;
  private static final long A4;
  static final long B1;
  private static final long B2;
  private static final long B3;
  private static final long B4;

  static {
    SecureRandom random = new SecureRandom();
    A1 = point(random);
    A2 = mod(fold(A1, A1));
    A3 = mod(fold(A2, A1));
    A4 = mod(fold(A3, A1));
    B1 = point(random);
    B2 = mod(fold(B1, B1));
    B3 = mod(fold(B2, B1));
    B4 = mod(fold(B3, B1));
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
      a = groupA(a, e0, e1, e2, e3);
      c = groupB(c, e0, e1, e2, e3);
      off += GROUP;
    }
    ha = a;
    hb = c;
    if (off < end) {
      System.arraycopy(b, off, carry, 0, end - off);
      carried = end - off;
    }
  }

  /** Hashes the 28 bytes at {@code off} into the state. */
  private void group(byte[] b, int off) {
    long e0 = element(b, off);
    long e1 = element(b, off + 7);
    long e2 = element(b, off + 14);
    long e3 = element(b, off + 21);
    ha = groupA(ha, e0, e1, e2, e3);
    hb = groupB(hb, e0, e1, e2, e3);
  }

  /**
   * The first half's state {@code a} after one more 28-byte group, given as its four 7-byte
   * little-endian elements (each below {@code 2^56}); for callers that hash while they scan.
   */
  static long groupA(long a, long e0, long e1, long e2, long e3) {
    return reduce(fold(a, A4) + fold(e0, A3) + fold(e1, A2) + fold(e2, A1) + e3);
  }

  /** As {@link #groupA}, for the second half's state. */
  static long groupB(long c, long e0, long e1, long e2, long e3) {
    return reduce(fold(c, B4) + fold(e0, B3) + fold(e1, B2) + fold(e2, B1) + e3);
  }

  /**
   * Takes the state of a hash computed elsewhere by {@link #groupA} and {@link #groupB} from zero
   * over {@code length} bytes (a multiple of 28); {@link #update} and {@link #finish} go on from it.
   */
  void resume(long a, long c, long length) {
    if (length % GROUP != 0) {
      throw new IllegalArgumentException("length: " + length + " (expected: a multiple of 28)");
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

  /** The hash of everything fed since construction or {@link #reset}. */
  TextHash finish() {
    long a = ha;
    long c = hb;
    java.util.Arrays.fill(carry, carried, carry.length, (byte) 0);
    for (int q = 0; q < carried; q += 7) {
      long e = element(carry, q);
      a = reduce(fold(a, A1) + e);
      c = reduce(fold(c, B1) + e);
    }
    a = mod(fold(a, A1) + length);
    c = mod(fold(c, B1) + length);
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
   * A number congruent to {@code x * y} modulo {@code p}, below {@code 2^62 + 16}, for
   * {@code x < 2^61 + 8} and {@code y < 2^61}.
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

  private static long point(SecureRandom random) {
    return 1 + Math.floorMod(random.nextLong(), P - 1);
  }
}
