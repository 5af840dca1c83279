package dev.kvroute.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class BlockTokensTest {
  static final SingleTokenVocabulary WORDS = SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());

  private static MooncakeRequest request(int inputLength, int... ids) {
    return new MooncakeRequest(1, 0, inputLength, 1, ids);
  }

  @Test
  void theSameBlockIdGivesTheSameTokensEverywhere() {
    BlockTokens a = BlockTokens.of(WORDS);
    BlockTokens b = BlockTokens.of(WORDS);
    int[] first = a.prompt(request(1024, 7, 8));
    int[] second = b.prompt(request(1536, 9, 7, 8));
    assertThat(first).isEqualTo(b.prompt(request(1024, 7, 8)));
    // block 7 as the second block of another prompt is still block 7's tokens
    assertThat(Arrays.copyOfRange(second, 512, 1024)).isEqualTo(Arrays.copyOfRange(first, 0, 512));
  }

  @Test
  void promptsSharingLeadingIdsShareExactlyThoseTokens() {
    BlockTokens blocks = BlockTokens.of(WORDS);
    int[] x = blocks.prompt(request(2048, 0, 1, 2, 3));
    int[] y = blocks.prompt(request(2048, 0, 1, 5, 6));
    assertThat(Arrays.mismatch(x, y)).isBetween(1024, 1024 + 16); // differ within block 2's first page
    assertThat(Arrays.copyOf(x, 1024)).isEqualTo(Arrays.copyOf(y, 1024));
  }

  @Test
  void aPartialLastBlockIsAPrefixOfTheFullBlock() {
    BlockTokens blocks = BlockTokens.of(WORDS);
    int[] full = blocks.prompt(request(1024, 3, 4));
    int[] partial = blocks.prompt(request(700, 3, 4));
    assertThat(partial).hasSize(700).isEqualTo(Arrays.copyOf(full, 700));
  }

  @Test
  void tokensAreWordsOfTheVocabularyAndVary() {
    int[] p = BlockTokens.of(WORDS).prompt(request(512, 42));
    assertThat(Arrays.stream(p).map(WORDS::indexOfToken)).allSatisfy(i -> assertThat(i).isNotNegative());
    assertThat(Arrays.stream(p).distinct().count()).isGreaterThan(400);
  }

  @Test
  void anotherSeedGivesOtherTokens() {
    int[] ids = {100, 200, 300};
    int[] a = new BlockTokens(ids, 1).prompt(request(512, 5));
    int[] b = new BlockTokens(ids, 2).prompt(request(512, 5));
    assertThat(a).isNotEqualTo(b);
    assertThat(a).containsOnly(100, 200, 300);
  }
}
