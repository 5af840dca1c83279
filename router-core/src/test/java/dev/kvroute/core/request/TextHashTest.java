package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TextHashTest {
  private static final BigInteger P = BigInteger.valueOf(PolynomialHasher.P);

  /**
   * The definition, evaluated naively with big integers: 56-byte groups of eight 7-byte elements,
   * the last group padded with zeros, each compressed to {@code (m0 + k0)(m1 + k1) + ... + (m6 +
   * k6)(m7 + k7) mod p}; the values and then the length by Horner's rule at {@code point}.
   */
  private static final long[] KEYS_A = {
    PolynomialHasher.K0, PolynomialHasher.K1, PolynomialHasher.K2, PolynomialHasher.K3,
    PolynomialHasher.K4, PolynomialHasher.K5, PolynomialHasher.K6, PolynomialHasher.K7
  };
  private static final long[] KEYS_B = {
    PolynomialHasher.L0, PolynomialHasher.L1, PolynomialHasher.L2, PolynomialHasher.L3,
    PolynomialHasher.L4, PolynomialHasher.L5, PolynomialHasher.L6, PolynomialHasher.L7
  };

  private static long naive(byte[] bytes, long[] keys, long point) {
    BigInteger r = BigInteger.valueOf(point);
    BigInteger h = BigInteger.ZERO;
    for (int g = 0; g < bytes.length; g += 56) {
      BigInteger[] x = new BigInteger[8];
      for (int j = 0; j < 8; j++) {
        long e = 0;
        for (int k = 0; k < 7 && g + 7 * j + k < bytes.length; k++) {
          e |= (bytes[g + 7 * j + k] & 0xFFL) << (8 * k);
        }
        x[j] = BigInteger.valueOf(e).add(BigInteger.valueOf(keys[j]));
      }
      BigInteger v = BigInteger.ZERO;
      for (int j = 0; j < 8; j += 2) {
        v = v.add(x[j].multiply(x[j + 1]));
      }
      v = v.mod(P);
      h = h.multiply(r).add(v).mod(P);
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
      assertThat(h.high()).as("length %d", len).isEqualTo(naive(bytes, KEYS_A, PolynomialHasher.A));
      assertThat(h.low()).as("length %d", len).isEqualTo(naive(bytes, KEYS_B, PolynomialHasher.B));
    }
  }

  @Test
  void anyChunkingGivesTheSameHash() {
    SplittableRandom random = new SplittableRandom(11);
    PolynomialHasher h = new PolynomialHasher();
    for (int round = 0; round < 2_000; round++) {
      byte[] bytes = new byte[random.nextInt(400)];
      random.nextBytes(bytes);
      TextHash whole = TextHash.ofUtf8(bytes, 0, bytes.length);
      h.reset();
      int at = 0;
      while (at < bytes.length) {
        int n = Math.min(bytes.length - at, random.nextInt(random.nextBoolean() ? 4 : 70));
        if (n == 1 && random.nextBoolean()) {
          h.update(bytes[at]);
        } else {
          h.update(bytes, at, n);
        }
        at += n;
      }
      assertThat(h.finish()).as("round %d", round).isEqualTo(whole);
    }
  }

  @Test
  void aStateFromTheGroupStepsResumesToTheSameHash() {
    // the fused scan's path: whole groups by stepA and stepB, then the rest by update
    SplittableRandom random = new SplittableRandom(13);
    for (int round = 0; round < 1_000; round++) {
      byte[] bytes = new byte[random.nextInt(300)];
      random.nextBytes(bytes);
      int groups = random.nextInt(bytes.length / 56 + 1);
      long a = 0;
      long c = 0;
      for (int g = 0; g < groups; g++) {
        int at = 56 * g;
        long[] e = new long[8];
        for (int j = 0; j < 8; j++) {
          e[j] = element(bytes, at + 7 * j);
        }
        a = PolynomialHasher.stepA(a, e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]);
        c = PolynomialHasher.stepB(c, e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]);
      }
      PolynomialHasher h = new PolynomialHasher();
      h.resume(a, c, 56L * groups);
      int at = 56 * groups;
      while (at < bytes.length) {
        int n = Math.min(bytes.length - at, 1 + random.nextInt(30));
        h.update(bytes, at, n);
        at += n;
      }
      assertThat(h.finish()).isEqualTo(TextHash.ofUtf8(bytes, 0, bytes.length));
    }
  }

  @Test
  void resumeRefusesALengthThatIsNotWholeGroups() {
    PolynomialHasher h = new PolynomialHasher();
    assertThatIllegalArgumentException()
        .isThrownBy(() -> h.resume(0, 0, 28))
        .withMessageContaining("28");
  }

  @Test
  void codePointsHashAsTheirUtf8() {
    SplittableRandom random = new SplittableRandom(17);
    PolynomialHasher h = new PolynomialHasher();
    for (int round = 0; round < 500; round++) {
      StringBuilder sb = new StringBuilder();
      h.reset();
      for (int k = random.nextInt(40); k > 0; k--) {
        int cp;
        do {
          cp = random.nextInt(4) == 0 ? random.nextInt(0x110000) : random.nextInt(0x80);
        } while (Character.isSurrogate((char) cp) && cp < 0x10000);
        sb.appendCodePoint(cp);
        h.updateCodePoint(cp);
      }
      assertThat(h.finish()).isEqualTo(TextHash.of(sb.toString()));
    }
  }

  private static long element(byte[] b, int at) {
    long e = 0;
    for (int k = 0; k < 7; k++) {
      e |= (b[at + k] & 0xFFL) << (8 * k);
    }
    return e;
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
    // zeros padding the last group, and zeros filling it, past every length of a text
    for (int len = 1; len <= 120; len++) {
      Set<TextHash> padded = new HashSet<>();
      for (int zeros = 0; zeros <= 120; zeros++) {
        byte[] b = new byte[len + zeros];
        Arrays.fill(b, 0, len, (byte) 'x');
        assertThat(padded.add(TextHash.ofUtf8(b, 0, b.length)))
            .as("%d bytes and %d zeros", len, zeros).isTrue();
      }
    }
  }

  @Test
  void aByteChangedAtAnyPositionOfAGroupChangesTheHash() {
    // every position of three groups and a tail, every value against the base text's
    SplittableRandom random = new SplittableRandom(19);
    byte[] base = new byte[2 * 56 + 11];
    random.nextBytes(base);
    TextHash baseHash = TextHash.ofUtf8(base, 0, base.length);
    for (int at = 0; at < base.length; at++) {
      Set<TextHash> seen = new HashSet<>();
      seen.add(baseHash);
      for (int v = 0; v < 256; v++) {
        if (v == (base[at] & 0xFF)) {
          continue;
        }
        byte[] b = base.clone();
        b[at] = (byte) v;
        assertThat(seen.add(TextHash.ofUtf8(b, 0, b.length))).as("byte %d = %d", at, v).isTrue();
      }
    }
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
