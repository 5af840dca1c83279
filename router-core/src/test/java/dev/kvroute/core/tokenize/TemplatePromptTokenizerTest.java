package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.RequestParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link TemplatePromptTokenizer} on a small hand-written {@code tokenizer.json} (word-level, two
 * special tokens) and a template that renders a message differently once another follows it: the
 * chunk-cached tokens of every turn equal the whole rendered prompt encoded in one call, and the
 * start-up checks name the missing or corrupt file.
 */
class TemplatePromptTokenizerTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final List<String> WORDS = TinyHfModel.WORDS;
  /** Earlier messages keep only the text after their last '|', the final one is whole (like Qwen3's think). */
  private static final String TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }} "
      + "{% if not loop.last %}{{ m.content.split('|')[-1] }}{% else %}{{ m.content }}{% endif %}<|im_end|>"
      + "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant {% endif %}";

  static Path writeModel(Path dir, String template) throws Exception {
    return TinyHfModel.write(dir, template);
  }

  @Test
  void cachedTokensOfEveryTurnEqualTheWholePromptEncodedAtOnce(@TempDir Path dir) throws Exception {
    TemplatePromptTokenizer hf = (TemplatePromptTokenizer)
        TokenizerSpec.parse("hf:" + writeModel(dir, TEMPLATE)).load(InstantSource.system(), 1 << 20);
    RequestParser parser = RequestParser.create();
    SplittableRandom random = new SplittableRandom(7);
    List<Map<String, Object>> messages = new ArrayList<>();
    messages.add(Map.of("role", "system", "content", words(random, 120)));
    long piecesBefore = 0;
    for (int turn = 0; turn < 12; turn++) {
      messages.add(Map.of("role", "user", "content", words(random, 80)));
      byte[] body = MAPPER.writeValueAsBytes(Map.of("model", "m", "messages", messages));
      int[] cached = hf.tokenize(parser.parse(Endpoint.CHAT_COMPLETIONS, body, h -> null));
      String text = hf.render(ChatInput.fromBody(body, 0, body.length, true));
      assertThat(cached).as("turn %d", turn).isEqualTo(hf.tokenizer().encode(text));
      assertThat(hf.tokenizer().decode(cached)).endsWith("<|im_start|> assistant");
      long pieces = hf.cachedPieces();
      if (turn > 0) { // the history's chunks were found; this turn added at most its changed ones
        assertThat(pieces - piecesBefore).as("new chunks at turn %d", turn).isLessThanOrEqualTo(3);
      }
      piecesBefore = pieces;
      messages.add(Map.of("role", "assistant", "content", words(random, 40) + " | " + words(random, 60)));
    }
  }

  @Test
  void viewsBuiltFromSegmentsRenderAsPlainMessages(@TempDir Path dir) throws Exception {
    PromptTokenizer hf = TokenizerSpec.parse("hf:" + writeModel(dir, TEMPLATE).resolve("tokenizer.json"))
        .load(InstantSource.system(), 1 << 20);
    byte[] body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hello world\"}]}".getBytes(StandardCharsets.UTF_8);
    int[] fromBody = hf.tokenize(RequestParser.create().parse(Endpoint.CHAT_COMPLETIONS, body, h -> null));
    int[] fromSegments = hf.tokenize(Endpoint.CHAT_COMPLETIONS,
        List.of(dev.kvroute.core.request.PromptSegment.text("user", "hello world")));
    assertThat(fromSegments).isEqualTo(fromBody).containsExactly(1, 3, 6, 7, 2, 1, 4);
  }

  @Test
  void aWrongPathACorruptFileOrAMissingTemplateFailsAtLoadSayingWhich(@TempDir Path dir) throws Exception {
    assertThatThrownBy(() -> TokenizerSpec.parse("hf:" + dir.resolve("nope")).load(InstantSource.system(), 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no tokenizer.json");
    Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": {\"type\": \"BPE\", \"vocab\": 3}}");
    assertThatThrownBy(() -> TokenizerSpec.parse("hf:" + dir).load(InstantSource.system(), 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rejected");
    Files.writeString(dir.resolve("tokenizer.json"), "{not json");
    assertThatThrownBy(() -> TokenizerSpec.parse("hf:" + dir).load(InstantSource.system(), 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a tokenizer.json");
    writeModel(dir, TEMPLATE);
    Files.writeString(dir.resolve("tokenizer_config.json"), "{\"eos_token\": \"<|im_end|>\"}");
    assertThatThrownBy(() -> TokenizerSpec.parse("hf:" + dir).load(InstantSource.system(), 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no chat_template");
  }

  @Test
  void aTemplateErrorIsAChatTemplateException(@TempDir Path dir) throws Exception {
    PromptTokenizer hf = TokenizerSpec.parse("hf:" + writeModel(dir,
        "{% if messages[0].role != 'system' %}{{ raise_exception('System message required') }}{% endif %}x"))
        .load(InstantSource.system(), 0);
    byte[] body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> hf.tokenize(RequestParser.create().parse(Endpoint.CHAT_COMPLETIONS, body, h -> null)))
        .isInstanceOf(ChatTemplateException.class).hasMessage("System message required");
  }

  @Test
  void specParsing() {
    assertThat(TokenizerSpec.parse("engine").kind()).isEqualTo(TokenizerSpec.Kind.ENGINE);
    assertThat(TokenizerSpec.parse("hf:/x/y")).isEqualTo(new TokenizerSpec(TokenizerSpec.Kind.HUGGINGFACE, "/x/y"));
    assertThat(TokenizerSpec.parse(" O200K_BASE ")).isEqualTo(TokenizerSpec.DEFAULT);
    assertThatThrownBy(() -> TokenizerSpec.parse("hf:")).hasMessageContaining("expected: hf:PATH");
    assertThatThrownBy(() -> TokenizerSpec.parse("gpt9")).hasMessageContaining("expected: o200k_base");
  }

  private static String words(SplittableRandom random, int n) {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < n; i++) {
      out.append(i == 0 ? "" : " ").append(WORDS.get(3 + random.nextInt(WORDS.size() - 4)));
    }
    return out.toString();
  }
}
