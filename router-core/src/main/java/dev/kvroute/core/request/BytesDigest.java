package dev.kvroute.core.request;

import java.security.SecureRandom;

/**
 * A keyed 122-bit digest of a byte range, made to recognize a request's JSON string as one an earlier
 * request held without keeping that request's bytes: with 512-bit vectors, it reads only the
 * request's bytes (about 0.7 µs for 22 KB on one core alone) and took less of the proxy's event loop
 * than comparing them with a kept copy ({@code docs/performance.md}, "a conversation's kept prompt
 * recognized by a digest").
 *
 * <p>Definition: UMAC's two levels (RFC 4418; Black, Halevi, Krawczyk, Krovetz and Rogaway, "UMAC:
 * Fast and Secure Message Authentication", CRYPTO 1999), with a polynomial modulo {@code p = 2^61 - 1}
 * as the second. The bytes are cut into blocks of {@value #BLOCK_BYTES} bytes (the last one shorter,
 * padded with zeros to a multiple of 8), each block into little-endian 32-bit words {@code m_0, m_1,
 * ...}. For {@code t = 0, 1}, a block's NH value is {@code y_t = sum_i ((m_2i + k_(2i+4t)) mod 2^32) *
 * ((m_2i+1 + k_(2i+1+4t)) mod 2^32) mod 2^64}, with secret 32-bit keys {@code k}: the second
 * instance's keys are the first's shifted by four words (the Toeplitz construction). The digest's
 * half {@code t} is the polynomial at a secret point {@code r_t} in {@code [1, p)} whose coefficients
 * are, block by block, {@code y_t}'s low and high 32 bits, then the byte length: {@code h_t = (...((y_t^1
 * lo) r_t + y_t^1 hi) r_t + ... + y_t^n hi) r_t + length mod p}.
 *
 * <p>Collisions, for two different byte strings chosen without knowledge of the secrets. Lengths
 * differ: the polynomials' constant terms differ, so each half agrees with probability at most
 * {@code d / p} ({@code d = 2n + 1} for {@code n} blocks), independently. Lengths equal: some block
 * differs (the padding is the same); take its last differing word pair {@code j}. Instance {@code t}
 * agrees on that block with probability at most {@code 2^-32} over the keys of pair {@code j} in
 * that instance (NH's bound), and those keys are used by no differing pair of instance {@code t - 1}
 * (whose pairs up to {@code j} use keys four words lower), so both instances agree with probability
 * at most {@code 2^-64}; an instance whose values differ has a different polynomial, which agrees
 * with probability at most {@code d / p}. In all: at most {@code 2^-64 + 2^-31 d / p + (d / p)^2},
 * about {@code 2^-64} for strings up to 1 MiB ({@code d / p < 2^-49}). The bound holds for chosen
 * strings as long as the secrets stay in the process; digests differ from one JVM to the next:
 * never persist or send them.
 *
 * <p>Immutable and thread-safe.
 *
 * @param high the half at the first point, in {@code [0, p)}
 * @param low the half at the second point, in {@code [0, p)}
 */
public record BytesDigest(long high, long low) {
  /** Bytes per NH block. */
  static final int BLOCK_BYTES = 1024;
  /** Words per block, and the key's length beyond them: the shift of the second instance. */
  static final int BLOCK_WORDS = BLOCK_BYTES / 4;
  static final int SHIFT = 4;
  static final long P = (1L << 61) - 1;
  private static final long LOW32 = 0xFFFFFFFFL;

  /** The NH key: {@code BLOCK_WORDS + SHIFT} words, drawn once per JVM (package-private for the vector path). */
  static final int[] KEY = new int[BLOCK_WORDS + SHIFT];
  /** The two polynomial points. */
  static final long R0;
  static final long R1;

  /**
   * Whether {@link #of} takes 512-bit vectors ({@code jdk.incubator.vector}, compiled by C2: {@link
   * ChatBodyScanner#VECTOR}): where a 64-bit lane multiply is one instruction (AVX-512). With
   * narrower vectors or none, the same digest is computed a word pair at a time, about three times
   * slower than comparing bytes in the CPU cache, so callers that may compare instead should
   * ({@link KeptSegment.Form#PREFERRED}).
   */
  public static final boolean FAST;

  static {
    SecureRandom random = new SecureRandom();
    for (int i = 0; i < KEY.length; i++) {
      KEY[i] = random.nextInt();
    }
    R0 = 1 + (random.nextLong() >>> 4) % (P - 1);
    R1 = 1 + (random.nextLong() >>> 4) % (P - 1);
    FAST = vectorUsable();
  }

  private static boolean vectorUsable() {
    if (!ChatBodyScanner.VECTOR) {
      return false;
    }
    try {
      return VectorNh.useful();
    } catch (LinkageError e) {
      return false;
    }
  }

  /**
   * The digest of {@code b[from, to)}.
   *
   * @throws IndexOutOfBoundsException if the range is not within {@code b}
   */
  public static BytesDigest of(byte[] b, int from, int to) {
    java.util.Objects.checkFromToIndex(from, to, b.length);
    return of(b, from, to, FAST);
  }

  /** As {@link #of(byte[], int, int)}, on 512-bit vectors or not ({@code vectors} only where {@link #FAST}). */
  static BytesDigest of(byte[] b, int from, int to, boolean vectors) {
    long h0 = 0;
    long h1 = 0;
    long[] y = new long[2];
    for (int block = from; block < to; block += BLOCK_BYTES) {
      int end = Math.min(to, block + BLOCK_BYTES);
      y[0] = 0;
      y[1] = 0;
      int p = vectors ? VectorNh.sums(b, block, end, y) : block;
      words(b, p, end, (p - block) >> 2, y);
      h0 = step(step(h0, y[0] & LOW32, R0), y[0] >>> 32, R0);
      h1 = step(step(h1, y[1] & LOW32, R1), y[1] >>> 32, R1);
    }
    long length = to - from;
    return new BytesDigest(step(h0, length, R0), step(h1, length, R1));
  }

  /**
   * Adds to {@code y} the NH sums of the words of {@code b[p, end)}, the block's words from {@code
   * word} on (an even index), the last pair padded with zeros.
   */
  private static void words(byte[] b, int p, int end, int word, long[] y) {
    long y0 = y[0];
    long y1 = y[1];
    for (; p < end; p += 8, word += 2) {
      long w = end - p >= 8 ? (long) JsonStrings.LONG_LE.get(b, p) : tail(b, p, end);
      int m0 = (int) w;
      int m1 = (int) (w >>> 32);
      y0 += ((m0 + KEY[word]) & LOW32) * ((m1 + KEY[word + 1]) & LOW32);
      y1 += ((m0 + KEY[word + SHIFT]) & LOW32) * ((m1 + KEY[word + 1 + SHIFT]) & LOW32);
    }
    y[0] = y0;
    y[1] = y1;
  }

  /** The bytes {@code b[p, end)} (fewer than 8) as a little-endian word, zero-padded. */
  private static long tail(byte[] b, int p, int end) {
    long w = 0;
    for (int i = 0; p + i < end; i++) {
      w |= (b[p + i] & 0xFFL) << (8 * i);
    }
    return w;
  }

  /** Both halves equal (written out: a record's generated {@code equals} showed in the loop's profile). */
  @Override
  public boolean equals(Object o) {
    return o instanceof BytesDigest d && d.high == high && d.low == low;
  }

  @Override
  public int hashCode() {
    return Long.hashCode(high * 31 + low);
  }

  /** {@code (h * r + c) mod p}, for {@code h, r < p} and {@code 0 <= c < 2^63 - 2^62}. */
  private static long step(long h, long c, long r) {
    long lo = h * r;
    long hi = Math.multiplyHigh(h, r); // h, r < 2^61: the product is below 2^122, hi below 2^58
    long s = (lo & P) + (lo >>> 61) + (hi << 3); // 2^64 = 8 (mod p), 2^61 = 1 (mod p); below 2^62 + 2^61
    s = (s & P) + (s >>> 61);
    s += c % P; // below 2^61 + 3 + p
    s = (s & P) + (s >>> 61);
    return s >= P ? s - P : s;
  }
}
