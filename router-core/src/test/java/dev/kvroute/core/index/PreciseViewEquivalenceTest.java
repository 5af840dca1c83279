package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.kvevents.KvEvent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link PreciseView} (primitive maps, issue 15) against {@link BoxedPreciseView} (the former boxed
 * maps) over random event streams: stores sharing prefixes, re-announcements, orphans, removals,
 * clears, speculation and expiry, with one-page and several-page engine blocks.
 */
class PreciseViewEquivalenceTest {
  private static final int PAGE = 4;

  @ParameterizedTest
  @ValueSource(ints = {4, 8, 16})
  void thePrimitiveViewBehavesAsTheBoxedOne(int blockSize) {
    SplittableRandom random = new SplittableRandom(blockSize);
    PreciseView view = new PreciseView(PAGE);
    BoxedPreciseView reference = new BoxedPreciseView(PAGE);
    List<int[]> prompts = new ArrayList<>();
    List<Long> hashes = new ArrayList<>();
    long now = 0;
    for (int op = 0; op < 30_000; op++) {
      now += random.nextInt(50);
      int action = random.nextInt(100);
      KvEvent event = null;
      if (action < 45 || prompts.isEmpty()) {
        // Tokens from a 2-letter alphabet in short prompts, so prefixes are shared often.
        int[] prompt = new int[blockSize * (1 + random.nextInt(5))];
        for (int i = 0; i < prompt.length; i++) {
          prompt[i] = 1 + random.nextInt(2);
        }
        prompts.add(prompt);
        int blocks = prompt.length / blockSize;
        int from = random.nextInt(blocks);
        long[] h = new long[blocks - from];
        for (int b = from; b < blocks; b++) {
          h[b - from] = engineHash(prompt, (b + 1) * blockSize);
          hashes.add(h[b - from]);
        }
        OptionalLong parent = from == 0 ? OptionalLong.empty()
            : OptionalLong.of(random.nextInt(8) == 0 ? random.nextLong() : engineHash(prompt, from * blockSize));
        String lora = random.nextInt(10) == 0 ? "adapter" : null;
        event = new KvEvent.BlockStored(h, parent,
            Arrays.copyOfRange(prompt, from * blockSize, prompt.length), blockSize, "GPU", lora, -1);
      } else if (action < 75) {
        long[] h = new long[1 + random.nextInt(4)];
        for (int i = 0; i < h.length; i++) {
          h[i] = random.nextInt(10) == 0 ? random.nextLong() : hashes.get(random.nextInt(hashes.size()));
        }
        event = KvEvent.BlockRemoved.gpu(h);
      } else if (action < 76) {
        event = new KvEvent.AllBlocksCleared();
      } else if (action < 90) {
        long[] keys = pageKeys(prompts.get(random.nextInt(prompts.size())));
        long expiry = now + random.nextInt(400);
        view.speculate(keys, now, expiry);
        reference.speculate(keys, now, expiry);
      } else {
        view.expire(now);
        reference.expire(now);
      }
      if (event != null) {
        assertThat(view.apply(event)).isEqualTo(reference.apply(event));
      }
      view.checkInvariants();
      assertThat(view.blockCount()).isEqualTo(reference.blockCount());
      assertThat(view.pageCount()).isEqualTo(reference.pageCount());
      assertThat(view.speculativeCount()).isEqualTo(reference.speculativeCount());
      assertThat(view.orphanBlocks()).isEqualTo(reference.orphanBlocks());
      for (int q = 0; q < 3; q++) {
        long[] keys = pageKeys(prompts.get(random.nextInt(prompts.size())));
        assertThat(view.matchPages(keys, now)).isEqualTo(reference.matchPages(keys, now));
      }
    }
    assertThat(view.blockCount()).isPositive();
  }

  /** A vLLM-like block hash: a function of every token up to the block's end. */
  private static long engineHash(int[] prompt, int end) {
    long h = 0x9e3779b97f4a7c15L;
    for (int i = 0; i < end; i++) {
      h = (h ^ prompt[i]) * 0xff51afd7ed558ccdL;
      h ^= h >>> 29;
    }
    return h;
  }

  private static long[] pageKeys(int[] prompt) {
    long[] keys = new long[prompt.length / PAGE];
    long parent = PageHash.ROOT;
    for (int p = 0; p < keys.length; p++) {
      parent = PageHash.next(parent, prompt, p * PAGE, PAGE);
      keys[p] = parent;
    }
    return keys;
  }
}
