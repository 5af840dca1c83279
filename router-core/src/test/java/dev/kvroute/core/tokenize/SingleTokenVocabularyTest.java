package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

class SingleTokenVocabularyTest {

  @ParameterizedTest
  @ValueSource(strings = {"o200k_base", "cl100k_base"})
  void everyWordIsOneTokenAndConcatenationsRoundTrip(String encoding) {
    Tokenizer t = Tokenizer.jtokkit(encoding);
    SingleTokenVocabulary v = SingleTokenVocabulary.of(t);
    assertThat(v.size()).isGreaterThan(5_000);
    for (int i = 0; i < v.size(); i++) {
      assertThat(v.word(i)).matches(" [a-z]{2,16}");
      assertThat(t.encode(v.word(i))).containsExactly(v.tokenId(i));
      assertThat(v.indexOfToken(v.tokenId(i))).isEqualTo(i);
      if (i > 0) {
        assertThat(v.tokenId(i)).isGreaterThan(v.tokenId(i - 1));
      }
    }
    RandomGenerator rng = new SplittableRandom(42);
    for (int trial = 0; trial < 200; trial++) {
      int n = rng.nextInt(1, 400);
      int[] indices = rng.ints(n, 0, v.size()).toArray();
      assertThat(t.encode(v.text(indices))).containsExactly(v.tokenIds(indices));
    }
  }

  @Test
  void randomTextHasExactlyTheAskedTokenCount() {
    Tokenizer t = Tokenizer.defaultTokenizer();
    SingleTokenVocabulary v = SingleTokenVocabulary.of(t);
    for (int n : new int[] {0, 1, 2, 17, 1000, 5000}) {
      assertThat(t.encode(v.randomText(n, new SplittableRandom(n)))).hasSize(n);
    }
    assertThat(v.randomText(50, new SplittableRandom(7)))
        .isEqualTo(v.randomText(50, new SplittableRandom(7)));
  }

  @Test
  void sharedForJtokkitAndRebuiltIdentically() {
    Tokenizer t = Tokenizer.defaultTokenizer();
    SingleTokenVocabulary shared = SingleTokenVocabulary.of(t);
    assertThat(SingleTokenVocabulary.of(t)).isSameAs(shared);
    Tokenizer wrapper =
        new Tokenizer() {
          @Override
          public int[] encode(String text) {
            return t.encode(text);
          }

          @Override
          public String decode(int[] tokenIds) {
            return t.decode(tokenIds);
          }

          @Override
          public String name() {
            return "wrapper";
          }
        };
    SingleTokenVocabulary rebuilt = SingleTokenVocabulary.of(wrapper);
    assertThat(rebuilt.size()).isEqualTo(shared.size());
    for (int i = 0; i < shared.size(); i += 97) {
      assertThat(rebuilt.word(i)).isEqualTo(shared.word(i));
    }
  }

  @Test
  void misuseIsRejected() {
    SingleTokenVocabulary v = SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());
    assertThatThrownBy(() -> v.randomText(-1, new SplittableRandom(1)))
        .hasMessage("tokens: -1 (expected: >= 0)");
    assertThatThrownBy(() -> v.word(v.size())).isInstanceOf(IndexOutOfBoundsException.class);
    assertThat(v.indexOfToken(-5)).isEqualTo(-1);
  }
}
