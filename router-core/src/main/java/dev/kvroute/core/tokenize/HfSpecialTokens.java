package dev.kvroute.core.tokenize;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The special-token variables transformers passes to a chat template ({@code special_tokens_map}):
 * {@code bos_token}, {@code eos_token}, {@code unk_token}, {@code sep_token}, {@code pad_token},
 * {@code cls_token}, {@code mask_token} (each a string, or {@code null} when unset) and {@code
 * additional_special_tokens}, read from {@code tokenizer_config.json}, where each may be a string
 * or an {@code {"content": ...}} object.
 */
final class HfSpecialTokens {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final List<String> NAMES =
      List.of("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token");

  private HfSpecialTokens() {}

  /**
   * The variables of {@code dir/tokenizer_config.json}; all {@code null} when there is no such file.
   *
   * @throws IllegalArgumentException if the file is not a JSON object
   * @throws IOException if it cannot be read
   */
  static Map<String, Object> read(Path dir) throws IOException {
    Map<String, Object> out = new LinkedHashMap<>();
    for (String name : NAMES) {
      out.put(name, null);
    }
    Path config = dir.resolve("tokenizer_config.json");
    if (!Files.isRegularFile(config)) {
      return out;
    }
    JsonNode root;
    try {
      root = MAPPER.readTree(config.toFile());
    } catch (IOException e) {
      throw new IllegalArgumentException(config + ": not JSON (" + e.getMessage() + ")", e);
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException(config + ": expected a JSON object");
    }
    for (String name : NAMES) {
      out.put(name, content(root.get(name)));
    }
    JsonNode extra = root.get("additional_special_tokens");
    if (extra != null && extra.isArray()) {
      List<Object> tokens = new ArrayList<>();
      for (JsonNode t : extra) {
        tokens.add(content(t));
      }
      out.put("additional_special_tokens", tokens);
    }
    return out;
  }

  private static String content(JsonNode token) {
    if (token == null || token.isNull()) {
      return null;
    }
    if (token.isTextual()) {
      return token.textValue();
    }
    JsonNode c = token.get("content");
    return c != null && c.isTextual() ? c.textValue() : null;
  }
}
