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
}
