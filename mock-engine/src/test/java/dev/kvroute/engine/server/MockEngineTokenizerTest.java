package dev.kvroute.engine.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.tokenize.ChatTemplateException;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.TinyHfModel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The mock engine's prompt tokenizer for {@code --tokenizer hf:PATH}, loaded and warmed up at start. */
class MockEngineTokenizerTest {
  private static byte[] chat(boolean system) {
    return ("{\"model\":\"m\",\"messages\":[" + (system ? "{\"role\":\"system\",\"content\":\"alpha\"}," : "")
        + "{\"role\":\"user\",\"content\":\"hello world\"}]}").getBytes(StandardCharsets.UTF_8);
  }

  /**
   * A chat template that refuses a system message (Gemma's does) refuses the warm-up's chat, which has
   * one: the engine still starts, and refuses only the requests with one (vLLM's 400).
   */
  @Test
  void aTemplateThatRefusesTheWarmUpsChatStillLoads(@TempDir Path dir) throws Exception {
    TinyHfModel.write(dir, "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}"
        + "{% endif %}{% for m in messages %}<|im_start|>{{ m.role }} {{ m.content }}<|im_end|>{% endfor %}");
    PromptTokenizer tokenizer = NettyMockEngine.sharedPromptTokenizer("hf:" + dir);
    RequestParser parser = RequestParser.create();
    assertThat(tokenizer.tokenize(parser.parse(Endpoint.CHAT_COMPLETIONS, chat(false), h -> null))).hasSize(5); // <|im_start|> user hello world <|im_end|>
    assertThatThrownBy(() -> tokenizer.tokenize(parser.parse(Endpoint.CHAT_COMPLETIONS, chat(true), h -> null)))
        .isInstanceOf(ChatTemplateException.class).hasMessage("System role not supported");
  }
}
