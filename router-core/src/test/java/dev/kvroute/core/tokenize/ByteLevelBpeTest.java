package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link ByteLevelBpe} (through {@link HfTokenizer#encodeInJava}) against the native {@code
 * tokenizers} library on the same file: a small hand-made byte-level BPE whose merges are built to
 * tell the library's merge-list semantics from tiktoken's rank semantics, and the real Qwen3 and
 * Llama 3.1 files on generated text that exercises the pre-tokenizer regex, NFC, added tokens and
 * long words (the heap path). Every text must give the native ids exactly.
 */
class ByteLevelBpeTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  /** Text drawn from these code points: ASCII classes, contractions, Unicode spaces, CJK, emoji, marks. */
  private static final String PALETTE = " \n\t\r  aAbz09'sS'll'ſ'Re<>|{}\"éñ中文字日本語한국어🙂👍🏽"
      + "e\u0301\u00a0\u2003\u3000\u200b\u0085Ω\u212b٣.,!?-_/\\";

  @Test
  void mergesFollowTheMergeListNotTheRanksOfTheirResults(@TempDir Path dir) throws Exception {
    // "xy" is a token with no merge making it: the library never produces it from x + y (tiktoken
    // would); "abc" comes from (a, bc) only, after (b, c); "aa" merges leftmost first.
    Path file = byteLevelModel(dir, List.of("b c", "a bc", "a a", "aa a", "q r", "p qr"), List.of("xy"), false);
    HfTokenizer t = HfTokenizer.load(file);
    assertThat(t.encodesInJava()).isTrue();
    for (String text : List.of("abc", "xy", "xyxy abc", "aaaaa", "aaa bc", "pqr qr pq", "", " ",
        "a".repeat(ByteLevelBpe.HEAP_ABOVE + 37), "bc".repeat(50) + "abc".repeat(40), "<|end|>abc<|end|>",
        "ab<|end|>", "<|end|><|end|>")) {
      assertThat(t.encodeInJava(text)).as("'%s'", text).isEqualTo(t.encodeNatively(text));
    }
  }

  @Test
  void ignoreMergesTakesAWordThatIsAToken(@TempDir Path dir) throws Exception {
    Path file = byteLevelModel(dir, List.of("a b"), List.of("abab", "xy"), true);
    HfTokenizer t = HfTokenizer.load(file);
    for (String text : List.of("abab", "ababab", "xy", "xyz", "ab")) {
      assertThat(t.encodeInJava(text)).as("'%s'", text).isEqualTo(t.encodeNatively(text));
    }
  }

  @Test
  void shapesItDoesNotImplementStayNative(@TempDir Path dir) throws Exception {
    Path file = byteLevelModel(dir, List.of("a b"), List.of(), false);
    Map<String, Object> json = MAPPER.readValue(file.toFile(), Map.class);
    json.put("normalizer", Map.of("type", "NFKC"));
    Files.write(file, MAPPER.writeValueAsBytes(json));
    HfTokenizer t = HfTokenizer.load(file);
    assertThat(t.encodesInJava()).isFalse();
    assertThat(t.encode("ab ab")).isEqualTo(t.encodeNatively("ab ab"));
  }

  @Test
  void textJavaCannotReproduceIsEncodedNatively() {
    assertThat(ByteLevelBpe.javaKnowsEveryCodePoint("plain, 中文, 🙂")).isTrue();
    assertThat(ByteLevelBpe.javaKnowsEveryCodePoint("lone \ud83d surrogate")).isFalse();
    assertThat(ByteLevelBpe.javaKnowsEveryCodePoint("lone \ude42 low")).isFalse();
    assertThat(ByteLevelBpe.javaKnowsEveryCodePoint("unassigned \u0378")).isFalse();
  }

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3_1"})
  void realTokenizersAgreeWithTheNativeLibrary(String model) throws Exception {
    HfTokenizer t = HfTokenizer.load(HfModelFiles.model(model));
    assertThat(t.encodesInJava()).isTrue();
    SplittableRandom random = new SplittableRandom(7);
    int[] points = PALETTE.codePoints().toArray();
    List<String> specials = List.of("<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|eot_id|>",
        "<|start_header_id|>", "<|end_header_id|>", "<|python_tag|>", "<tool_call>");
    int compared = 0;
    for (int i = 0; i < 3_000; i++) {
      StringBuilder b = new StringBuilder();
      int len = random.nextInt(i % 50 == 0 ? 2_000 : 120);
      for (int k = 0; k < len; k++) {
        int r = random.nextInt(40);
        if (r == 0) {
          b.append(specials.get(random.nextInt(specials.size())));
        } else if (r == 1) {
          b.append(String.valueOf((char) ('a' + random.nextInt(3))).repeat(random.nextInt(200)));
        } else if (r == 2) {
          b.append(random.nextInt(1_000_000));
        } else {
          b.appendCodePoint(points[random.nextInt(points.length)]);
        }
      }
      String text = b.toString();
      int[] java = t.encodeInJava(text);
      assertThat(java).as("Java can encode '%s'", text).isNotNull();
      assertThat(java).as("'%s'", text).isEqualTo(t.encodeNatively(text));
      compared++;
    }
    assertThat(compared).isEqualTo(3_000);
    assertThat(t.javaMismatches()).isZero();
  }

  /**
   * A GPT-2 style byte-level BPE: the 256 byte symbols, then each merge's result in order, then
   * {@code extraTokens} (tokens no merge makes), Qwen2's pre-tokenizer regex, one added token
   * {@code <|end|>}.
   */
  static Path byteLevelModel(Path dir, List<String> merges, List<String> extraTokens, boolean ignoreMerges)
      throws Exception {
    Map<String, Object> vocab = new LinkedHashMap<>();
    int extra = 0;
    for (int b = 0; b < 256; b++) {
      boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      vocab.put(String.valueOf(printable ? (char) b : (char) (256 + extra++)), b);
    }
    for (String m : merges) {
      vocab.putIfAbsent(m.replace(" ", ""), vocab.size());
    }
    for (String t : extraTokens) {
      vocab.putIfAbsent(t, vocab.size());
    }
    List<Object> added = new ArrayList<>();
    added.add(Map.of("id", vocab.size(), "content", "<|end|>", "single_word", false, "lstrip", false,
        "rstrip", false, "normalized", false, "special", true));
    Map<String, Object> model = new LinkedHashMap<>();
    model.put("type", "BPE");
    model.put("dropout", null);
    model.put("unk_token", null);
    model.put("continuing_subword_prefix", "");
    model.put("end_of_word_suffix", "");
    model.put("fuse_unk", false);
    model.put("byte_fallback", false);
    model.put("ignore_merges", ignoreMerges);
    model.put("vocab", vocab);
    model.put("merges", merges);
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("version", "1.0");
    json.put("truncation", null);
    json.put("padding", null);
    json.put("added_tokens", added);
    json.put("normalizer", Map.of("type", "NFC"));
    json.put("pre_tokenizer", Map.of("type", "Sequence", "pretokenizers", List.of(
        Map.of("type", "Split", "pattern", Map.of("Regex",
                "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                    + "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
            "behavior", "Isolated", "invert", false),
        Map.of("type", "ByteLevel", "add_prefix_space", false, "trim_offsets", false, "use_regex", false))));
    json.put("post_processor", null);
    json.put("decoder", Map.of("type", "ByteLevel", "add_prefix_space", false, "trim_offsets", false,
        "use_regex", false));
    json.put("model", model);
    Path file = dir.resolve("tokenizer.json");
    Files.write(file, MAPPER.writeValueAsBytes(json));
    return file;
  }
}
