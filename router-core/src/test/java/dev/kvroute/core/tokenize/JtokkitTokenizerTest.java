package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class JtokkitTokenizerTest {

  @Test
  void defaultIsO200kBaseAndSharedPerEncoding() {
    Tokenizer t = Tokenizer.defaultTokenizer();
    assertThat(t.name()).isEqualTo("o200k_base");
    assertThat(Tokenizer.jtokkit("o200k_base")).isSameAs(t);
  }

  @Test
  void encodeDecodeRoundTrips() {
    for (String enc : new String[] {"o200k_base", "cl100k_base"}) {
      Tokenizer t = Tokenizer.jtokkit(enc);
      String text = "Hello, world! Ünïcödé 数字 123 <|im_start|>user\n";
      int[] ids = t.encode(text);
      assertThat(ids).isNotEmpty();
      assertThat(t.decode(ids)).isEqualTo(text);
    }
  }

  @Test
  void encodingsDiffer() {
    String text = "The quick brown fox jumps over the lazy dog.";
    assertThat(Tokenizer.jtokkit("cl100k_base").encode(text))
        .isNotEqualTo(Tokenizer.jtokkit("o200k_base").encode(text));
  }

  @Test
  void specialTokenTextIsOrdinaryText() {
    Tokenizer t = Tokenizer.defaultTokenizer();
    int[] ids = t.encode("<|endoftext|>");
    assertThat(ids.length).isGreaterThan(1);
    assertThat(t.decode(ids)).isEqualTo("<|endoftext|>");
  }

  @Test
  void unknownEncodingIsRejected() {
    assertThatThrownBy(() -> Tokenizer.jtokkit("nope_base"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("tokenizer: nope_base (expected:");
  }

  @Test
  void decodingUnknownIdIsRejected() {
    assertThatThrownBy(() -> Tokenizer.defaultTokenizer().decode(new int[] {Integer.MAX_VALUE}))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aHugePieceWithoutWhitespaceWentToBytePairMergingWhole() {
    // Issue 11 C1: one multi-megabyte piece without whitespace made jtokkit's merge superlinear.
    // Such a run is now encoded in parts of MAX_RUN_CHARS characters.
    Tokenizer t = Tokenizer.defaultTokenizer();
    java.util.SplittableRandom random = new java.util.SplittableRandom(7);
    StringBuilder run = new StringBuilder();
    for (int i = 0; i < 10 * JtokkitTokenizer.MAX_RUN_CHARS + 17; i++) {
      run.append((char) ('a' + random.nextInt(26)));
    }
    run.append("\uD83D\uDE00"); // a surrogate pair right at the end of the run
    String text = "prefix words " + run + " suffix";
    java.util.List<Integer> expected = new java.util.ArrayList<>();
    int from = 0;
    for (int cut = JtokkitTokenizer.nextCut(text, 0); cut >= 0; cut = JtokkitTokenizer.nextCut(text, cut)) {
      assertThat(cut - from).isLessThanOrEqualTo(JtokkitTokenizer.MAX_RUN_CHARS + "prefix words ".length() + 1);
      for (int id : t.encode(text.substring(from, cut))) {
        expected.add(id);
      }
      from = cut;
    }
    for (int id : t.encode(text.substring(from))) {
      expected.add(id);
    }
    int[] ids = t.encode(text);
    assertThat(ids).containsExactly(expected.stream().mapToInt(Integer::intValue).toArray());
    assertThat(t.decode(ids)).isEqualTo(text);
  }

  @Test
  void textWithoutLongRunsIsEncodedExactlyAsJtokkitDoes() {
    String text = "The quick brown fox jumps over the lazy dog. ".repeat(200)
        + "x".repeat(JtokkitTokenizer.MAX_RUN_CHARS - 1) + " end";
    assertThat(JtokkitTokenizer.nextCut(text, 0)).isEqualTo(-1);
    assertThat(Tokenizer.defaultTokenizer().encode(text)).containsExactly(
        com.knuddels.jtokkit.Encodings.newLazyEncodingRegistry()
            .getEncoding(com.knuddels.jtokkit.api.EncodingType.O200K_BASE)
            .encodeOrdinary(text).toArray());
  }

  @Test
  void cutsNeverSplitASurrogatePair() {
    String text = "a".repeat(JtokkitTokenizer.MAX_RUN_CHARS - 1) + "\uD83D\uDE00" + "b".repeat(300);
    int cut = JtokkitTokenizer.nextCut(text, 0);
    assertThat(cut).isEqualTo(JtokkitTokenizer.MAX_RUN_CHARS + 1);
    assertThat(Character.isHighSurrogate(text.charAt(cut - 1))).isFalse();
    assertThat(Tokenizer.defaultTokenizer().decode(Tokenizer.defaultTokenizer().encode(text))).isEqualTo(text);
  }
}
