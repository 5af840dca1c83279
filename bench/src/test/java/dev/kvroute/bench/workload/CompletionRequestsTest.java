package dev.kvroute.bench.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import org.junit.jupiter.api.Test;

class CompletionRequestsTest {
  private static final int[] PROMPT = {0, 7, 10, 99, 100, 199_997, 123_456_789};

  @Test
  void bodyIsAStreamedCompletionOfTheTokenIdsWithAFixedReplyLength() throws Exception {
    JsonNode n = new ObjectMapper().readTree(CompletionRequests.body("m/x", "conv-12", PROMPT, 343));
    assertThat(n.get("model").asText()).isEqualTo("m/x");
    assertThat(n.get("prompt")).hasSize(PROMPT.length);
    for (int i = 0; i < PROMPT.length; i++) {
      assertThat(n.get("prompt").get(i).asInt()).isEqualTo(PROMPT[i]);
    }
    assertThat(n.get("max_tokens").asInt()).isEqualTo(343);
    assertThat(n.get("ignore_eos").asBoolean()).isTrue();
    assertThat(n.get("stream").asBoolean()).isTrue();
    assertThat(n.get("stream_options").get("include_usage").asBoolean()).isTrue();
    assertThat(n.get("user").asText()).isEqualTo("conv-12");
    assertThat(new ObjectMapper().readTree(CompletionRequests.body("m", null, PROMPT, 1)).has("user")).isFalse();
  }

  @Test
  void theRouterParsesTheBodyIntoTheViewTheSimulatorRoutes() throws Exception {
    byte[] body = CompletionRequests.body("m", "conv-12", PROMPT, 5);
    RequestView parsed = RequestParser.create().parse(Endpoint.COMPLETIONS, body, h -> null);
    RequestView simulated = CompletionRequests.view("m", "conv-12", PROMPT, 5);
    PromptTokenizer tokenizer = PromptTokenizer.create(Tokenizer.defaultTokenizer());
    assertThat(tokenizer.tokenize(parsed)).containsExactly(PROMPT);
    assertThat(tokenizer.tokenize(simulated)).containsExactly(PROMPT);
    assertThat(parsed.sessionKey()).isEqualTo(simulated.sessionKey());
    assertThat(parsed.maxTokens()).isEqualTo(simulated.maxTokens());
    assertThat(parsed.endpoint()).isEqualTo(simulated.endpoint());
  }

  @Test
  void keysThatWouldNeedEscapingAndNegativeIdsAreRefused() {
    assertThatThrownBy(() -> CompletionRequests.body("m", "a\"b", PROMPT, 1)).hasMessageContaining("sessionKey");
    assertThatThrownBy(() -> CompletionRequests.body("m", null, new int[] {1, -2}, 1))
        .hasMessage("promptTokens[1]: -2 (expected: a non-negative token id)");
  }
}
