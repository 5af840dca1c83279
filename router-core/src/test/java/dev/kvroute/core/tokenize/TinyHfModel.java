package dev.kvroute.core.tokenize;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A model directory for {@code hf:PATH} tests, written in a test's temporary directory: a word-level
 * {@code tokenizer.json} (whitespace pre-tokenizer, {@code [UNK]} for words outside its vocabulary,
 * {@code <|im_start|>} and {@code <|im_end|>} as special tokens 1 and 2) and a
 * {@code tokenizer_config.json} with the given chat template. Shared with the other modules' tests
 * through router-core's test jar.
 */
public final class TinyHfModel {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  /** The vocabulary's words, ids 3 on in this order. */
  public static final List<String> WORDS = List.of("user", "assistant", "system", "hello", "world", "alpha",
      "beta", "gamma", "delta", "old", "new", ".", ",", "|");

  private TinyHfModel() {}

  /** Writes the model's two files into {@code dir}; returns {@code dir}. */
  public static Path write(Path dir, String chatTemplate) throws IOException {
    Map<String, Object> vocab = new LinkedHashMap<>();
    vocab.put("[UNK]", 0);
    vocab.put("<|im_start|>", 1);
    vocab.put("<|im_end|>", 2);
    for (int i = 0; i < WORDS.size(); i++) {
      vocab.put(WORDS.get(i), i + 3);
    }
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("version", "1.0");
    json.put("truncation", null);
    json.put("padding", null);
    json.put("added_tokens", List.of(special(1, "<|im_start|>"), special(2, "<|im_end|>")));
    json.put("normalizer", null);
    json.put("pre_tokenizer", Map.of("type", "Whitespace"));
    json.put("post_processor", null);
    json.put("decoder", null);
    json.put("model", Map.of("type", "WordLevel", "vocab", vocab, "unk_token", "[UNK]"));
    Files.write(dir.resolve("tokenizer.json"), MAPPER.writeValueAsBytes(json));
    Files.write(dir.resolve("tokenizer_config.json"),
        MAPPER.writeValueAsBytes(Map.of("chat_template", chatTemplate, "eos_token", "<|im_end|>")));
    return dir;
  }

  private static Map<String, Object> special(int id, String content) {
    Map<String, Object> t = new LinkedHashMap<>();
    t.put("id", id);
    t.put("content", content);
    t.put("single_word", false);
    t.put("lstrip", false);
    t.put("rstrip", false);
    t.put("normalized", false);
    t.put("special", true);
    return t;
  }
}
