package dev.kvroute.core.request;

import java.nio.charset.StandardCharsets;

/**
 * A 122-bit hash of a text: its UTF-8 bytes compressed 56 at a time by a keyed pair-product hash
 * and the results hashed by a polynomial modulo the Mersenne prime {@code p = 2^61 - 1}, twice,
 * with independent keys and points, all secret and drawn once per JVM. kvroute keys its token cache
 * by it, so equal texts must and different texts must not hash alike.
 *
 * <p>Definition. The bytes are the text's UTF-8 encoding (a lone surrogate, which UTF-8 cannot
 * encode, is written as its 3-byte generalized UTF-8 form, so every {@code String} has its own
 * bytes). They are cut into {@code n} groups of 56 bytes, the last one padded with zeros, and each
 * group into eight 7-byte little-endian elements {@code m_0..m_7} (each below {@code 2^56}). For
 * each half, group {@code i} compresses to {@code v_i = (sum_{j<4} (m_2j + k_2j)(m_2j+1 +
 * k_2j+1)) mod p} with the half's eight secret keys {@code k_0..k_7} uniform in {@code [0, p)}, and
 * the half is {@code h(r) = (sum_i v_i * r^(n+1-i) + len) mod p}, where {@code len} is the byte
 * length, at the half's secret point {@code r} uniform in {@code [1, p)}.
 *
 * <p>Collisions. Take two different texts of at most {@code L} bytes, chosen without knowledge of
 * the keys and points. If their lengths differ, so do their polynomials' constant terms. If not,
 * some group differs, and in one half its two values {@code v} agree with probability at most
 * {@code 1 / p} over that half's keys: in a pair of elements that differs, say {@code (m_0, m_1)}
 * with {@code m_0 != m_0'}, the difference of the values is {@code k_1 (m_0 - m_0')} plus terms
 * free of {@code k_1}, and {@code m_0 - m_0'} is not a multiple of {@code p} (both are below
 * {@code 2^56}), so for any other keys one {@code k_1} in {@code [0, p)} makes them agree (if
 * {@code m_0 = m_0'}, then {@code m_1 != m_1'} and {@code k_0} plays that role). This is the
 * argument for NH (Black, Halevi, Krawczyk, Krovetz and Rogaway, "UMAC: Fast and Secure Message
 * Authentication", CRYPTO 1999) over the field of integers modulo {@code p}, where NH works modulo
 * {@code 2^w}; on 8-byte words the difference could be a multiple of {@code p}, hence the 7-byte
 * elements. When the values differ, the polynomials differ and have degree at most {@code d =
 * ceil(L / 56) + 1}, so the half agrees with probability at most {@code d / p}. Each half thus
 * collides with probability at most {@code (1 + d) / p}, the two independently: at most {@code ((1
 * + d) / p)^2} in all, about {@code 2^-100} for texts of 100 KB. (Sharing one compression between
 * the halves would save four of the ten products per group but leave a floor of {@code 1 / p},
 * about {@code 2^-61}, whatever the length.) The bound holds for adversarially chosen texts too, as
 * long as keys and points stay secret (they never leave the process). The values themselves differ
 * from one JVM to the next; never persist them.
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
