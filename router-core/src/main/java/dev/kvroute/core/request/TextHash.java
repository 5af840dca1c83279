package dev.kvroute.core.request;

import java.nio.charset.StandardCharsets;

/**
 * A 122-bit hash of a text: two independent polynomial hashes of the text's UTF-8 bytes modulo the
 * Mersenne prime {@code p = 2^61 - 1}, each at its own secret random point drawn once per JVM.
 * kvroute keys its token cache by it, so equal texts must and different texts must not hash alike.
 *
 * <p>Definition. The bytes are the text's UTF-8 encoding (a lone surrogate, which UTF-8 cannot
 * encode, is written as its 3-byte generalized UTF-8 form, so every {@code String} has its own
 * bytes). They are cut into 7-byte little-endian elements {@code m_1..m_n} (the last one padded with
 * zeros) followed by the byte length {@code m_{n+1} = len}, and each half is
 * {@code h(r) = sum_i m_i * r^(n+1-i) mod p} at its point {@code r}.
 *
 * <p>Collisions. For two different texts of at most {@code L} bytes, chosen without knowledge of the
 * points, the difference of their polynomials is a non-zero polynomial of degree at most
 * {@code d = ceil(L / 7) + 1}, so each half collides with probability at most {@code d / p} and the
 * pair with at most {@code (d / p)^2}: about {@code 4 * 10^-27} for two texts of a megabyte each. This
 * bound holds for adversarially chosen texts too, as long as the points stay secret (they never
 * leave the process). The values themselves differ from one JVM to the next; never persist them.
 *
 * <p>Immutable and thread-safe.
 *
 * @param high the hash at the first point, in {@code [0, 2^61 - 1)}
 * @param low the hash at the second point, in {@code [0, 2^61 - 1)}
 */
public record TextHash(long high, long low) {
  /** The hash of {@code text}'s UTF-8 bytes (lone surrogates as generalized UTF-8). */
  public static TextHash of(String text) {
    byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
    // getBytes writes a lone surrogate as '?': only then is the generalized form needed.
    if (hasQuestionMark(utf8) && hasSurrogate(text)) {
      utf8 = generalizedUtf8(text);
    }
    PolynomialHasher h = new PolynomialHasher();
    h.update(utf8, 0, utf8.length);
    return h.finish();
  }

  /** The hash of {@code length} bytes of {@code utf8} from {@code offset}, taken as they are. */
  public static TextHash ofUtf8(byte[] utf8, int offset, int length) {
    PolynomialHasher h = new PolynomialHasher();
    h.update(utf8, offset, length);
    return h.finish();
  }

  private static boolean hasQuestionMark(byte[] utf8) {
    for (byte b : utf8) {
      if (b == '?') {
        return true;
      }
    }
    return false;
  }

  private static boolean hasSurrogate(String text) {
    for (int i = 0; i < text.length(); i++) {
      if (Character.isSurrogate(text.charAt(i))) {
        return true;
      }
    }
    return false;
  }

  /** UTF-8 where surrogate pairs combine and lone surrogates take their 3-byte form. */
  private static byte[] generalizedUtf8(String text) {
    byte[] out = new byte[3 * text.length()];
    int n = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        n = PolynomialHasher.putUtf8(out, n, Character.toCodePoint(c, text.charAt(++i)));
      } else {
        n = PolynomialHasher.putUtf8(out, n, c);
      }
    }
    return java.util.Arrays.copyOf(out, n);
  }

  @Override
  public String toString() {
    return String.format("TextHash[%016x%016x]", high, low);
  }
}
