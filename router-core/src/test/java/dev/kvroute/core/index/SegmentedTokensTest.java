package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PrefixedTokens;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link SegmentedTokens} against a flat array built alongside: random chains of prefixes and
 * appends (as chat turns make them: an earlier prompt cut, new tokens added), every read checked.
 */
class SegmentedTokensTest {
  @Test
  void prefixesAndAppendsReadAsTheFlatArray() {
    SplittableRandom random = new SplittableRandom(18);
    for (int chain = 0; chain < 200; chain++) {
      int[] flat = random.ints(random.nextInt(0, 40), 0, 1000).toArray();
      SegmentedTokens t = SegmentedTokens.of(flat);
      for (int step = 0; step < 60; step++) {
        if (random.nextInt(3) == 0) {
          int cut = random.nextInt(flat.length + 1);
          t = t.prefix(cut);
          flat = Arrays.copyOf(flat, cut);
        } else {
          int[] tail = random.ints(random.nextInt(0, 30), 0, 1000).toArray();
          t = t.append(tail);
          int at = flat.length;
          flat = Arrays.copyOf(flat, at + tail.length);
          System.arraycopy(tail, 0, flat, at, tail.length);
        }
        assertThat(t.segments()).isLessThanOrEqualTo(SegmentedTokens.MAX_SEGMENTS);
        check(t, flat, random);
      }
      // assembled once, then the same array
      assertThat(t.toArray()).containsExactly(flat).isSameAs(t.toArray());
    }
  }

  private static void check(SegmentedTokens t, int[] flat, SplittableRandom random) {
    assertThat(t.length()).isEqualTo(flat.length);
    for (int k = 0; k < 8 && flat.length > 0; k++) {
      int from = random.nextInt(flat.length);
      int count = random.nextInt(1, flat.length - from + 1);
      int[] to = new int[count + 2];
      t.copy(from, to, 1, count);
      assertThat(Arrays.copyOfRange(to, 1, count + 1)).containsExactly(Arrays.copyOfRange(flat, from, from + count));
      int s = t.segmentHolding(from, count);
      if (s >= 0) { // read in place: the range lies in that segment's array
        int start = t.start(s);
        assertThat(from).isGreaterThanOrEqualTo(start);
        assertThat(Arrays.copyOfRange(t.array(s), from - start, from - start + count))
            .containsExactly(Arrays.copyOfRange(flat, from, from + count));
      } else {
        assertThat(t.segments()).isGreaterThan(1);
      }
    }
  }

  @Test
  void aTurnSharesItsEarlierTurnsArrays() {
    int[] first = {1, 2, 3, 4, 5, 6, 90, 91}; // 6 message tokens, then a generation prompt
    int[] second = {7, 8, 90, 91};
    SegmentedTokens turn = SegmentedTokens.of(first).prefix(6).append(second);
    assertThat(turn.segments()).isEqualTo(2);
    assertThat(turn.array(0)).isSameAs(first);
    assertThat(turn.array(1)).isSameAs(second);
    assertThat(turn.segmentHolding(2, 4)).isEqualTo(0);
    assertThat(turn.segmentHolding(5, 2)).isEqualTo(-1);
    assertThat(turn.segmentHolding(6, 4)).isEqualTo(1);
    assertThat(turn.toArray()).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 90, 91);
    // the earlier arrays are untouched
    assertThat(first).containsExactly(1, 2, 3, 4, 5, 6, 90, 91);
  }

  @Test
  void manyTurnsAreFlattenedAtTheSegmentBound() {
    SegmentedTokens t = SegmentedTokens.of(new int[] {0});
    for (int i = 1; i <= 3 * SegmentedTokens.MAX_SEGMENTS; i++) {
      t = t.append(new int[] {i});
      assertThat(t.segments()).isBetween(1, SegmentedTokens.MAX_SEGMENTS);
    }
    int[] want = new int[3 * SegmentedTokens.MAX_SEGMENTS + 1];
    Arrays.setAll(want, i -> i);
    assertThat(t.toArray()).containsExactly(want);
  }

  @Test
  void compactKeepsTheAssembledArrayAlone() {
    int[] first = {1, 2, 3, 4};
    SegmentedTokens t = SegmentedTokens.of(first).prefix(3).append(new int[] {7, 8});
    assertThat(t.compact()).as("nothing assembled: kept as it is").isSameAs(t);
    int[] flat = t.toArray();
    SegmentedTokens kept = t.compact();
    assertThat(kept.segments()).isEqualTo(1);
    assertThat(kept.array(0)).isSameAs(flat);
    assertThat(kept.toArray()).containsExactly(1, 2, 3, 7, 8);
    assertThat(kept.compact()).isSameAs(kept);
    // one array cut short and assembled: the copy alone is kept, not the longer array beside it
    SegmentedTokens cut = SegmentedTokens.of(first).prefix(2);
    int[] cutFlat = cut.toArray();
    assertThat(cut.compact().array(0)).isSameAs(cutFlat).containsExactly(1, 2);
    // assembled() keeps nothing here: a new array each call until toArray() has assembled one
    SegmentedTokens u = SegmentedTokens.of(first).prefix(3).append(new int[] {9});
    int[] a = u.assembled();
    assertThat(a).containsExactly(1, 2, 3, 9).isNotSameAs(u.assembled());
    assertThat(u.compact()).isSameAs(u);
    assertThat(SegmentedTokens.of(first).assembled()).isSameAs(first);
  }

  /**
   * A kept prompt holds its tokens once: in the segments it was routed with, or, when something
   * assembled its flat array (the precise index does, for its page keys), in that array alone, which
   * the next turn then shares.
   */
  @Test
  void aKeptPromptHoldsItsTokensOnce() {
    for (boolean assembled : new boolean[] {false, true}) {
      PromptTokenizer pt = PromptTokenizer.create(Tokenizer.defaultTokenizer());
      PrefixIndex index = PrefixIndex.radix(16, () -> 0L);
      List<PromptSegment> messages = new ArrayList<>(List.of(
          PromptSegment.text("system", "be brief ".repeat(40)), PromptSegment.text("user", "hello")));
      List<SegmentedTokens> turns = new ArrayList<>();
      for (int turn = 0; turn < 4; turn++) {
        PrefixedTokens t = pt.tokenizePrefixed(new RequestView(
            Endpoint.CHAT_COMPLETIONS, "m", null, List.copyOf(messages), false, -1));
        PrefixIndex.Prompt p = index.prompt(t.segmented(), 0L, t.knownPageHashes(), t.sharedTokens());
        index.match(p);
        if (assembled) {
          t.tokens();
        }
        t.remember(p.pageHashes());
        turns.add(t.segmented());
        messages.add(PromptSegment.text("assistant", "reply " + turn + " ".repeat(turn)));
        messages.add(PromptSegment.text("user", "next " + turn));
      }
      for (int turn = 1; turn < turns.size(); turn++) {
        SegmentedTokens before = turns.get(turn - 1);
        SegmentedTokens now = turns.get(turn);
        if (assembled) { // the previous turn's flat array, then this turn's tail
          assertThat(now.segments()).isEqualTo(2);
          assertThat(now.array(0)).isSameAs(before.toArray());
        } else { // the previous turn's arrays, then this turn's tail
          assertThat(now.segments()).isEqualTo(turn + 1);
          for (int s = 0; s < before.segments(); s++) {
            assertThat(now.array(s)).isSameAs(before.array(s));
          }
        }
      }
    }
  }

  @Test
  void badRangesAreRefused() {
    SegmentedTokens t = SegmentedTokens.of(new int[] {1, 2, 3}).append(new int[] {4});
    assertThatThrownBy(() -> t.prefix(5)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("length: 5 (expected: 0 to 4)");
    assertThatThrownBy(() -> t.prefix(-1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> t.copy(2, new int[4], 0, 3)).isInstanceOf(IndexOutOfBoundsException.class);
    assertThatThrownBy(() -> t.copy(0, new int[2], 0, 3)).isInstanceOf(IndexOutOfBoundsException.class);
    assertThat(t.prefix(0).length()).isZero();
    assertThat(t.prefix(0).toArray()).isEmpty();
    assertThat(t.prefix(0).append(new int[] {9}).toArray()).containsExactly(9);
  }
}
