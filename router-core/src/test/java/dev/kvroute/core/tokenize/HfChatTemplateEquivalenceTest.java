package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Token-for-token equality with Python transformers' {@code apply_chat_template(messages,
 * tokenize=True, add_generation_prompt=...)} for the real Qwen3 and Llama 3.1 tokenizers, on the
 * 520-request corpus of {@code src/test/python/hf_chat_reference.py} (multi-turn histories, system
 * prompts, tools, tool calls and results, content parts, reasoning blocks, CJK, emoji, combining
 * marks, empty and whitespace-only messages, very long messages). Every request goes through the
 * router's real path (the request parser, then one {@link PromptTokenizer} for the whole corpus, so
 * later turns of a conversation take their history from the prefix and chunk caches), and each
 * prompt is also encoded whole without the cache: both must equal the reference. The corpus is run
 * twice, the second pass answered from the {@link PrefixRenderCache} built by the first.
 *
 * <p>{@link #everyPrefixFromTheCacheEqualsTheFullRendering}: every conversation of the corpus is
 * replayed a message at a time (the first {@code k} messages for each {@code k}), so each request
 * extends a cached prefix, and every answer must equal the full rendering of the same request (the
 * path the first test holds equal to transformers); some of those windows are rendered by
 * substitution ({@link ContentSkeletons}) and every text is encoded by the Java BPE
 * ({@link ByteLevelBpe}), so both are held to the full rendering here.
 */
class HfChatTemplateEquivalenceTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final int REQUESTS = 520;

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3_1"})
  void everyPromptMatchesTransformersTokenForToken(String model) throws Exception {
    Path dir = HfModelFiles.model(model);
    Path corpus = HfModelFiles.reference(dir, Path.of("target", "hf-reference", model + ".jsonl"), REQUESTS);
    PromptTokenizer cached = TokenizerSpec.parse("hf:" + dir).load(InstantSource.system(), 64L << 20);
    TemplatePromptTokenizer hf = (TemplatePromptTokenizer) cached;
    RequestParser parser = RequestParser.create();
    List<String> mismatches = new ArrayList<>();
    int requests = 0;
    long tokens = 0;
    for (int pass = 1; pass <= 2; pass++) {
    long hitsBefore = hf.prefixes().hits();
    try (BufferedReader in = Files.newBufferedReader(corpus, StandardCharsets.UTF_8)) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        JsonNode row = MAPPER.readTree(line);
        byte[] body = MAPPER.writeValueAsBytes(row.get("request"));
        int[] expected = MAPPER.convertValue(row.get("tokens"), int[].class);
        RequestView view = parser.parse(Endpoint.CHAT_COMPLETIONS, body, name -> null);
        int[] actual = cached.tokenize(view);
        requests++;
        tokens += expected.length;
        if (!java.util.Arrays.equals(actual, expected)) {
          String text = hf.render(ChatInput.fromBody(body, 0, body.length, hf.template().stringContent()));
          String want = row.get("text").textValue();
          mismatches.add("pass " + pass + ", request " + row.get("id") + ": " + (text.equals(want)
              ? "same text, tokens differ at " + firstDifference(actual, expected)
              : "text differs at char " + firstDifference(text, want) + ":\n  java:   "
                  + excerpt(text, firstDifference(text, want)) + "\n  python: "
                  + excerpt(want, firstDifference(text, want))));
        } else {
          String text = row.get("text").textValue();
          assertThat(hf.tokenizer().encode(text)).as("request %s encoded whole", row.get("id")).isEqualTo(expected);
        }
      }
    }
    if (pass == 2) {
      assertThat(hf.prefixes().hits() - hitsBefore).as("second pass answered from cached prefixes")
          .isGreaterThan(REQUESTS / 2);
    }
    }
    assertThat(hf.prefixes().mismatches()).as("checked cache hits that differed").isZero();
    assertThat(requests).isGreaterThanOrEqualTo(1000);
    assertThat(mismatches).as("%s: %d of %d requests (%d tokens) differ", model, mismatches.size(), requests, tokens)
        .isEmpty();
  }

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3_1"})
  void everyPrefixFromTheCacheEqualsTheFullRendering(String model) throws Exception {
    Path dir = HfModelFiles.model(model);
    Path corpus = HfModelFiles.reference(dir, Path.of("target", "hf-reference", model + ".jsonl"), REQUESTS);
    TemplatePromptTokenizer hf =
        (TemplatePromptTokenizer) TokenizerSpec.parse("hf:" + dir).load(InstantSource.system(), 64L << 20);
    RequestParser parser = RequestParser.create();
    List<String> mismatches = new ArrayList<>();
    int compared = 0;
    try (BufferedReader in = Files.newBufferedReader(corpus, StandardCharsets.UTF_8)) {
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        com.fasterxml.jackson.databind.node.ObjectNode request =
            (com.fasterxml.jackson.databind.node.ObjectNode) MAPPER.readTree(line).get("request");
        JsonNode messages = request.get("messages");
        for (int k = 1; k <= messages.size(); k++) {
          com.fasterxml.jackson.databind.node.ObjectNode prefix = request.deepCopy();
          com.fasterxml.jackson.databind.node.ArrayNode kept = prefix.putArray("messages");
          for (int i = 0; i < k; i++) {
            kept.add(messages.get(i));
          }
          byte[] body = MAPPER.writeValueAsBytes(prefix);
          RequestView view = parser.parse(Endpoint.CHAT_COMPLETIONS, body, name -> null);
          int[] full;
          try {
            full = hf.renderFully(view).tokens();
          } catch (ChatTemplateException e) {
            continue; // a prefix the template rejects (say, no user message yet)
          }
          int[] cached = hf.tokenize(view);
          compared++;
          if (!java.util.Arrays.equals(cached, full)) {
            mismatches.add("request " + MAPPER.readTree(line).get("id") + " first " + k + " messages: "
                + "tokens differ at " + firstDifference(cached, full));
          }
        }
      }
    }
    assertThat(hf.prefixes().hits()).as("requests answered from a cached prefix").isGreaterThan(compared / 4);
    assertThat(hf.prefixes().substitutedRenders()).as("windows rendered by substitution").isPositive();
    assertThat(((HfTokenizer) hf.tokenizer()).encodesInJava()).as("encoded by the Java BPE throughout").isTrue();
    assertThat(mismatches).as("%s: %d of %d prefixes differ", model, mismatches.size(), compared).isEmpty();
    assertThat(hf.prefixes().mismatches()).isZero();
  }

  private static int firstDifference(int[] a, int[] b) {
    int n = Math.min(a.length, b.length);
    for (int i = 0; i < n; i++) {
      if (a[i] != b[i]) {
        return i;
      }
    }
    return n;
  }

  private static int firstDifference(String a, String b) {
    int n = Math.min(a.length(), b.length());
    for (int i = 0; i < n; i++) {
      if (a.charAt(i) != b.charAt(i)) {
        return i;
      }
    }
    return n;
  }

  private static String excerpt(String s, int at) {
    int from = Math.max(0, at - 40);
    return s.substring(from, Math.min(s.length(), at + 60)).replace("\n", "\\n");
  }
}
