package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TextHashTest {
  private static final BigInteger P = BigInteger.valueOf(PolynomialHasher.P);

  /** The definition, evaluated naively with big integers. */
  private static long naive(byte[] bytes, long point) {
    BigInteger r = BigInteger.valueOf(point);
    BigInteger h = BigInteger.ZERO;
    for (int q = 0; q < bytes.length; q += 7) {
      long e = 0;
      for (int k = 0; k < 7 && q + k < bytes.length; k++) {
        e |= (bytes[q + k] & 0xFFL) << (8 * k);
      }
      h = h.multiply(r).add(BigInteger.valueOf(e)).mod(P);
    }
    return h.multiply(r).add(BigInteger.valueOf(bytes.length)).mod(P).longValueExact();
  }

  @Test
  void agreesWithNaiveEvaluationOfTheDefinition() {
    SplittableRandom random = new SplittableRandom(7);
    for (int len = 0; len < 300; len++) {
      byte[] bytes = new byte[len];
      for (int i = 0; i < len; i++) {
        // mostly extreme bytes, to exercise the lazy reductions near their bounds
        bytes[i] = random.nextInt(4) == 0 ? (byte) random.nextInt(256) : (byte) 0xFF;
      }
      TextHash h = TextHash.ofUtf8(bytes, 0, len);
      assertThat(h.high()).as("length %d", len).isEqualTo(naive(bytes, PolynomialHasher.A1));
      assertThat(h.low()).as("length %d", len).isEqualTo(naive(bytes, PolynomialHasher.B1));
    }
  }

  @Test
  void anyChunkingGivesTheSameHash() {
    SplittableRandom random = new SplittableRandom(11);
    for (int round = 0; round < 200; round++) {
      byte[] bytes = new byte[random.nextInt(400)];
      random.nextBytes(bytes);
      TextHash whole = TextHash.ofUtf8(bytes, 0, bytes.length);
      PolynomialHasher h = new PolynomialHasher();
      h.reset();
      int at = 0;
      while (at < bytes.length) {
        int n = Math.min(bytes.length - at, random.nextInt(40));
        if (n == 1 && random.nextBoolean()) {
          h.update(bytes[at]);
        } else {
          h.update(bytes, at, n);
        }
        at += n;
      }
      assertThat(h.finish()).isEqualTo(whole);
    }
  }

  @Test
  void stringHashIsTheHashOfItsUtf8() {
    for (String s : new String[] {"", "a", "héllo wörld", "日本語のテキスト", "emoji 😀 pair", "tab\tnew\nline"}) {
      byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
      assertThat(TextHash.of(s)).as(s).isEqualTo(TextHash.ofUtf8(utf8, 0, utf8.length));
    }
  }

  @Test
  void loneSurrogatesHashApartFromTheReplacementUtf8WouldGiveThem() {
    // String.getBytes(UTF_8) turns a lone surrogate into '?': the hash must not.
    assertThat(TextHash.of("a\ud800b")).isNotEqualTo(TextHash.of("a?b"));
    assertThat(TextHash.of("a\udc00b")).isNotEqualTo(TextHash.of("a\ud800b"));
    assertThat(TextHash.of("\ud83d")).isNotEqualTo(TextHash.of("\ude00"));
    // a valid pair is its 4-byte UTF-8 form
    assertThat(TextHash.of("\ud83d\ude00")).isEqualTo(TextHash.of("😀"));
  }

  @Test
  void trailingZeroBytesAndLengthsAreTold() {
    Set<TextHash> seen = new HashSet<>();
    for (int len = 0; len <= 64; len++) {
      assertThat(seen.add(TextHash.ofUtf8(new byte[len], 0, len))).as("%d zeros", len).isTrue();
    }
    assertThat(TextHash.of("a")).isNotEqualTo(TextHash.of("a\0"));
  }

  @Test
  void differentTextsOfEqualLengthDoNotCollide() {
    // Every text of length 1 and 2 over 40 characters, and 200,000 random 40-char texts.
    Map<TextHash, String> seen = new HashMap<>();
    String alphabet = "\0 abcdefghijklmnopqrstuvwxyzé😀\ud800\"\\\n.,;:AB";
    for (int i = 0; i < alphabet.length(); i++) {
      put(seen, alphabet.substring(i, i + 1));
      for (int j = 0; j < alphabet.length(); j++) {
        put(seen, "" + alphabet.charAt(i) + alphabet.charAt(j));
      }
    }
    SplittableRandom random = new SplittableRandom(3);
    char[] text = new char[40];
    for (int n = 0; n < 200_000; n++) {
      for (int i = 0; i < text.length; i++) {
        text[i] = (char) ('a' + random.nextInt(4));
      }
      put(seen, new String(text));
    }
    // texts one bit apart, at every position
    byte[] base = new byte[64];
    Set<TextHash> flips = new HashSet<>();
    flips.add(TextHash.ofUtf8(base, 0, base.length));
    for (int bit = 0; bit < 8 * base.length; bit++) {
      byte[] b = base.clone();
      b[bit / 8] ^= (byte) (1 << (bit % 8));
      assertThat(flips.add(TextHash.ofUtf8(b, 0, b.length))).as("bit %d", bit).isTrue();
    }
  }

  private static void put(Map<TextHash, String> seen, String s) {
    String before = seen.putIfAbsent(TextHash.of(s), s);
    assertThat(before == null || before.equals(s))
        .as("collision between %s and %s", before, s)
        .isTrue();
  }

  @Test
  void halvesAreBelowTheModulus() {
    SplittableRandom random = new SplittableRandom(5);
    for (int i = 0; i < 1_000; i++) {
      byte[] bytes = new byte[random.nextInt(100)];
      random.nextBytes(bytes);
      TextHash h = TextHash.ofUtf8(bytes, 0, bytes.length);
      assertThat(h.high()).isBetween(0L, PolynomialHasher.P - 1);
      assertThat(h.low()).isBetween(0L, PolynomialHasher.P - 1);
    }
  }
}
