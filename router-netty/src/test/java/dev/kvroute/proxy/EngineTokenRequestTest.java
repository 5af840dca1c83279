package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The {@code /tokenize} body the router sends and the keys it caches the answer under. */
final class EngineTokenRequestTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final RequestParser PARSER = RequestParser.create();

  static RequestView view(Endpoint endpoint, String body) throws Exception {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    return PARSER.parse(endpoint, bytes, 0, bytes.length, h -> null);
  }

  private static final String CHAT = "{\"model\":\"m\",\"max_tokens\":3,\"stream\":true,\"messages\":[ "
      + "{\"role\":\"system\",\"content\":\"Be \\\"terse\\\".\"},\n {\"role\":\"user\",\"content\":[{\"type\":\"text\","
      + "\"text\":\"caf\\u00e9 😀\"}]}],\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}],"
      + "\"chat_template_kwargs\":{\"enable_thinking\":false},\"add_generation_prompt\":true,\"chat_template\":\"x\\\"y\","
      + "\"temperature\":0.5,\"documents\":null}";

  @Test
  void chatBodyCarriesTheMessagesAndEveryRenderingFieldByteForByte() throws Exception {
    EngineTokenRequest r = EngineTokenRequest.of(view(Endpoint.CHAT_COMPLETIONS, CHAT), "served");
    assertThat(r.chat()).isTrue();
    JsonNode sent = JSON.readTree(r.body());
    JsonNode original = JSON.readTree(CHAT);
    assertThat(sent.get("model").asText()).isEqualTo("served");
    assertThat(sent.get("messages")).isEqualTo(original.get("messages"));
    assertThat(sent.get("tools")).isEqualTo(original.get("tools"));
    assertThat(sent.get("chat_template_kwargs")).isEqualTo(original.get("chat_template_kwargs"));
    assertThat(sent.get("add_generation_prompt").asBoolean()).isTrue();
    assertThat(sent.get("chat_template").asText()).isEqualTo("x\"y");
    // generation fields are not the tokenizer's business; a null field is as if absent
    assertThat(sent.has("max_tokens") || sent.has("stream") || sent.has("temperature") || sent.has("documents"))
        .isFalse();
    assertThat(r.prefixKeys()).hasSize(2);
    assertThat(r.prefixBytes()[1]).isGreaterThan(r.prefixBytes()[0]).isPositive();
  }

  @Test
  void keysAreEqualExactlyForEqualMessagePrefixesUnderEqualRenderingFields() throws Exception {
    String a = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    String b = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"yo\"},"
        + "{\"role\":\"user\",\"content\":\"more\"}],\"model\":\"m\",\"max_tokens\":9}";
    String c = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
        + "\"chat_template_kwargs\":{\"enable_thinking\":true}}";
    String d = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi!\"}]}";
    EngineTokenRequest ra = EngineTokenRequest.of(view(Endpoint.CHAT_COMPLETIONS, a), "m");
    EngineTokenRequest rb = EngineTokenRequest.of(view(Endpoint.CHAT_COMPLETIONS, b), "m");
    EngineTokenRequest rc = EngineTokenRequest.of(view(Endpoint.CHAT_COMPLETIONS, c), "m");
    EngineTokenRequest rd = EngineTokenRequest.of(view(Endpoint.CHAT_COMPLETIONS, d), "m");
    EngineTokenRequest other = EngineTokenRequest.of(view(Endpoint.CHAT_COMPLETIONS, a), "other-model");
    assertThat(rb.prefixKeys()[0]).isEqualTo(ra.key());
    assertThat(rb.key()).isNotEqualTo(ra.key());
    assertThat(rc.key()).as("other template kwargs").isNotEqualTo(ra.key());
    assertThat(rd.key()).as("another message").isNotEqualTo(ra.key());
    assertThat(other.key()).as("another model").isNotEqualTo(ra.key());
  }

  @Test
  void completionAndSglangTextPromptsAreSentAsPrompt() throws Exception {
    String body = "{\"model\":\"m\",\"prompt\":\"tell me \\\"a\\\" story\",\"add_special_tokens\":false,\"max_tokens\":5}";
    EngineTokenRequest r = EngineTokenRequest.of(view(Endpoint.COMPLETIONS, body), "m");
    JsonNode sent = JSON.readTree(r.body());
    assertThat(sent.get("prompt").asText()).isEqualTo("tell me \"a\" story");
    assertThat(sent.get("add_special_tokens").asBoolean()).isFalse();
    assertThat(r.chat()).isFalse();

    EngineTokenRequest s = EngineTokenRequest.of(view(Endpoint.SGLANG_GENERATE,
        "{\"text\":\"tell me \\\"a\\\" story\",\"sampling_params\":{\"max_new_tokens\":4}}"), null);
    JsonNode sentS = JSON.readTree(s.body());
    assertThat(sentS.get("prompt").asText()).isEqualTo("tell me \"a\" story");
    assertThat(sentS.has("model")).isFalse();
  }

  @Test
  void addSpecialTokensNoWasLeftOutThoughTheEngineReadsItAsFalse() throws Exception {
    for (String no : new String[] {"\"no\"", "\"OFF\"", "0", "0.0", "false"}) {
      String body = "{\"model\":\"m\",\"prompt\":\"hi\",\"add_special_tokens\":" + no + "}";
      EngineTokenRequest r = EngineTokenRequest.of(view(Endpoint.COMPLETIONS, body), "m");
      assertThat(JSON.readTree(r.body()).get("add_special_tokens")).as(no).isEqualTo(JSON.readTree("false"));
      assertThat(r.key()).as(no).isEqualTo(EngineTokenRequest.of(view(Endpoint.COMPLETIONS,
          "{\"model\":\"m\",\"prompt\":\"hi\",\"add_special_tokens\":false}"), "m").key());
    }
    String yes = "{\"model\":\"m\",\"prompt\":\"hi\",\"add_special_tokens\":\"Yes\"}";
    assertThat(JSON.readTree(EngineTokenRequest.of(view(Endpoint.COMPLETIONS, yes), "m").body())
        .get("add_special_tokens").asBoolean()).isTrue();
  }

  @Test
  void tokenIdsAndPromptListsAreNotSent() throws Exception {
    assertThat(EngineTokenRequest.of(view(Endpoint.COMPLETIONS, "{\"model\":\"m\",\"prompt\":[1,2,3]}"), "m")).isNull();
    assertThat(EngineTokenRequest.of(view(Endpoint.COMPLETIONS, "{\"model\":\"m\",\"prompt\":[\"a\",\"b\"]}"), "m"))
        .isNull();
    assertThat(EngineTokenRequest.of(view(Endpoint.SGLANG_GENERATE, "{\"input_ids\":[1,2,3]}"), null)).isNull();
  }

  @Test
  void aBodyAtAnOffsetInItsArrayIsReadFromThere() throws Exception {
    String body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    byte[] padded = ("xxxx" + body + "yy").getBytes(StandardCharsets.UTF_8);
    RequestView v = PARSER.parse(Endpoint.CHAT_COMPLETIONS, padded, 4, body.length(), h -> null);
    EngineTokenRequest r = EngineTokenRequest.of(v, "m");
    assertThat(JSON.readTree(r.body()).get("messages")).isEqualTo(JSON.readTree(body).get("messages"));
    assertThat(r.key()).isEqualTo(EngineTokenRequest.of(view(Endpoint.CHAT_COMPLETIONS, body), "m").key());
  }
}
