package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PageHashTest {

  private static long xxh64(String text, long seed) {
    return PageHash.xxh64(text.getBytes(StandardCharsets.US_ASCII), seed);
  }

  @Test
  void byteReferenceMatchesPublishedXxh64Vectors() {
    assertThat(xxh64("", 0)).isEqualTo(0xEF46DB3751D8E999L);
    assertThat(xxh64("abc", 0)).isEqualTo(0x44BC2CF5AD770999L);
    assertThat(xxh64("xxhash", 0)).isEqualTo(0x32DD38952C4BC720L);
    assertThat(xxh64("xxhash", 20141025)).isEqualTo(0xB559B98D844E0635L);
    assertThat(xxh64("I want an unsigned 64-bit seed!", 0)).isEqualTo(0xD4CB0A70A2B8C7C1L);
    assertThat(xxh64("Nobody inspects the spammish repetition", 0)).isEqualTo(0xFBCEA83C8A378BF1L);
    assertThat(xxh64("a".repeat(32), 0)).isEqualTo(0x856E843298F99AD7L);
  }

  @Test
  void tokenHashEqualsXxh64OfLittleEndianTokenBytes() {
    SplittableRandom random = new SplittableRandom(7);
    for (int count = 0; count <= 41; count++) {
      for (int trial = 0; trial < 20; trial++) {
        int[] tokens = new int[count + 3];
        for (int i = 0; i < tokens.length; i++) {
          tokens[i] = trial % 2 == 0 ? random.nextInt(200_000) : random.nextInt();
        }
        long seed = random.nextLong();
        ByteBuffer bytes = ByteBuffer.allocate(4 * count).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < count; i++) {
          bytes.putInt(tokens[3 + i]);
        }
        assertThat(PageHash.next(seed, tokens, 3, count))
            .as("count %d", count)
            .isEqualTo(PageHash.xxh64(bytes.array(), seed));
      }
    }
  }

  @Test
  void chainedHashDependsOnParentAndEveryToken() {
    int[] page = new int[16];
    long base = PageHash.next(PageHash.ROOT, page, 0, 16);
    Set<Long> seen = new HashSet<>();
    seen.add(base);
    for (int i = 0; i < 16; i++) {
      int[] changed = page.clone();
      changed[i] = 1;
      assertThat(seen.add(PageHash.next(PageHash.ROOT, changed, 0, 16))).isTrue();
    }
    assertThat(PageHash.next(base, page, 0, 16)).isNotEqualTo(base);
    assertThat(seen.add(PageHash.next(PageHash.ROOT + 1, page, 0, 16))).isTrue();
  }

  @Test
  void noCollisionsAmongAMillionChainedPages() {
    SplittableRandom random = new SplittableRandom(11);
    int[] tokens = new int[16];
    Set<Long> seen = new HashSet<>(2_000_000);
    long parent = PageHash.ROOT;
    for (int i = 0; i < 1_000_000; i++) {
      for (int t = 0; t < 16; t++) {
        tokens[t] = random.nextInt(8); // tiny vocabulary: many near-identical pages
      }
      long hash = PageHash.next(parent, tokens, 0, 16);
      assertThat(seen.add(hash)).isTrue();
      parent = (i % 64 == 0) ? PageHash.ROOT : hash;
    }
  }
}
