package dev.kvroute.engine.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.server.GenerationValidator.GenerationRequest;
import dev.kvroute.engine.server.GenerationValidator.Rejection;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** vLLM's request checks without a socket: the status and error body each rejection answers. */
final class GenerationValidatorTest {
  private static final PromptTokenizer TOKENIZER = MockEngineServer.sharedPromptTokenizer("o200k_base");

  private static GenerationValidator validator(int maxModelLen, int maxNumSeqs) {
    MockEngineOptions options = MockEngineOptions.builder()
        .engine(EngineConfig.builder().maxModelLen(maxModelLen).maxNumSeqs(maxNumSeqs).build())
        .models(new ModelOptions(List.of("alias"), Map.of("sql-lora", "/adapters/sql"), 1, false, 0.1))
        .build();
    return new GenerationValidator(RequestParser.create(), TOKENIZER, new EngineModels(options),
        maxModelLen, maxNumSeqs);
  }

  private final GenerationValidator v = validator(100, 40);

  private GenerationRequest valid(Endpoint endpoint, String body) throws Rejection {
    return v.validate(endpoint, body.getBytes(StandardCharsets.UTF_8), name -> null);
  }

  private Rejection rejected(Endpoint endpoint, String body) {
    return catchThrowableOfType(Rejection.class, () -> valid(endpoint, body));
  }

  private static JsonNode error(Rejection r) throws Exception {
    return GenerationValidator.MAPPER.readTree(r.json()).get("error");
  }

  private static String chat(String extra) {
    return "{\"model\":\"kvroute/mock-llm\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}]" + extra + "}";
  }

  @Test
  void aValidChatRequestCarriesItsParameters() throws Exception {
    GenerationRequest g = valid(Endpoint.CHAT_COMPLETIONS, chat(",\"stream\":true,\"n\":2,\"max_tokens\":5,"
        + "\"min_tokens\":1,\"ignore_eos\":true,\"seed\":9,\"stream_options\":{\"include_usage\":true},"
        + "\"request_id\":\"r1\""));
    assertThat(g.stream()).isTrue();
    assertThat(g.includeUsage()).isTrue();
    assertThat(g.continuousUsage()).isFalse();
    assertThat(g.n()).isEqualTo(2);
    assertThat(g.maxTokens()).isEqualTo(5);
    assertThat(g.minTokens()).isEqualTo(1);
    assertThat(g.ignoreEos()).isTrue();
    assertThat(g.seed()).isEqualTo(9);
    assertThat(g.lora()).isNull();
    assertThat(g.servedModel()).isEqualTo("kvroute/mock-llm");
    assertThat(g.bodyRequestId()).isEqualTo("r1");
    assertThat(g.prompts()).singleElement().satisfies(p -> assertThat(p).isEqualTo(
        TOKENIZER.tokenize(RequestParser.create().parse(Endpoint.CHAT_COMPLETIONS,
            chat("").getBytes(StandardCharsets.UTF_8), name -> null))));
  }

  @Test
  void withoutMaxTokensChatGetsWhatTheContextLeavesAndCompletionsGet16() throws Exception {
    GenerationRequest chat = valid(Endpoint.CHAT_COMPLETIONS, chat(""));
    assertThat(chat.maxTokens()).isEqualTo(100 - chat.prompts().get(0).length);
    assertThat(valid(Endpoint.COMPLETIONS, "{\"prompt\":[1,2,3]}").maxTokens()).isEqualTo(16);
    // chat's max_completion_tokens wins over max_tokens
    assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"max_tokens\":9,\"max_completion_tokens\":3")).maxTokens())
        .isEqualTo(3);
  }

  @Test
  void anAdapterAndAnAliasAreServedModels() throws Exception {
    GenerationRequest lora = valid(Endpoint.COMPLETIONS, "{\"model\":\"sql-lora\",\"prompt\":\"hi\",\"max_tokens\":1}");
    assertThat(lora.lora()).isEqualTo("sql-lora");
    assertThat(lora.servedModel()).isEqualTo("sql-lora");
    GenerationRequest alias = valid(Endpoint.COMPLETIONS, "{\"model\":\"alias\",\"prompt\":\"hi\",\"max_tokens\":1}");
    assertThat(alias.lora()).isNull();
    assertThat(alias.servedModel()).isEqualTo("kvroute/mock-llm");
  }

  @Test
  void anUnknownModelIsVllms404() throws Exception {
    Rejection r = rejected(Endpoint.CHAT_COMPLETIONS,
        "{\"model\":\"nope\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
    assertThat(r.status()).isEqualTo(404);
    assertThat(r.unknownModel()).isTrue();
    assertThat(error(r).get("message").asText()).isEqualTo("The model `nope` does not exist.");
    assertThat(error(r).get("type").asText()).isEqualTo("NotFoundError");
    assertThat(error(r).get("param").asText()).isEqualTo("model");
    assertThat(error(r).get("code").asInt()).isEqualTo(404);
  }

  @Test
  void bodiesThatAreNotAJsonObjectAreBadRequest() throws Exception {
    for (String body : List.of("{\"messages\": [", "[1,2]", "\"text\"", "", "{\"prompt\":[1,2,x]}")) {
      Rejection r = rejected(Endpoint.COMPLETIONS, body);
      assertThat(r.status()).as(body).isEqualTo(400);
      assertThat(r.unknownModel()).isFalse();
      assertThat(error(r).get("type").asText()).as(body).isEqualTo("Bad Request");
      assertThat(error(r).get("message").asText()).as(body)
          .matches("JSON decode error.*|Input should be a valid dictionary or object to extract fields from");
    }
  }

  @Test
  void samplingFieldsAreTypedAsVllmTypesThem() throws Exception {
    String[][] cases = {
        {",\"n\":1.5", "n: expected an integer, got 1.5"},
        {",\"min_tokens\":-1", "min_tokens: -1 (expected: >= 0)"},
        {",\"temperature\":\"hot\"", "temperature: expected a number, got \"hot\""},
        {",\"top_k\":\"five\"", "top_k: expected an integer, got \"five\""},
    };
    for (String[] c : cases) {
      Rejection r = rejected(Endpoint.CHAT_COMPLETIONS, chat(c[0]));
      assertThat(r.status()).as(c[0]).isEqualTo(400);
      assertThat(error(r).get("message").asText()).as(c[0]).isEqualTo(c[1]);
      assertThat(error(r).get("type").asText()).as(c[0]).isEqualTo("Bad Request");
    }
    // pydantic's lax mode: a numeric string is a float, 5.0 is an integer
    assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"top_p\":\"0.5\",\"top_k\":5.0,\"max_tokens\":1")).n())
        .isEqualTo(1);
  }

  @Test
  void streamYesWasRefusedThoughVllmsPydanticReadsItAsTrue() throws Exception {
    GenerationRequest g = valid(Endpoint.CHAT_COMPLETIONS, chat(",\"stream\":\"yes\",\"ignore_eos\":\"On\","
        + "\"stream_options\":{\"include_usage\":\"t\",\"continuous_usage_stats\":1},\"max_tokens\":1"));
    assertThat(g.stream()).isTrue();
    assertThat(g.ignoreEos()).isTrue();
    assertThat(g.includeUsage()).isTrue();
    assertThat(g.continuousUsage()).isTrue();
    g = valid(Endpoint.COMPLETIONS, "{\"prompt\":\"hi\",\"stream\":\"0\",\"ignore_eos\":\"no\",\"echo\":null,"
        + "\"add_special_tokens\":\"y\",\"max_tokens\":1}");
    assertThat(g.stream()).isFalse();
    assertThat(g.ignoreEos()).isFalse();
    // Optional[bool] = True: null is None, which is falsy
    assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"stream\":1.0,\"stream_options\":{\"include_usage\":null}"
        + ",\"max_tokens\":1")).includeUsage()).isFalse();
  }

  @Test
  void booleansPydanticRefusesAre400WithFastApisValidationTextBeforeTheModelIsLookedUp() throws Exception {
    String[][] cases = {
        {",\"stream\":\"maybe\"", "bool_parsing", "('body', 'stream')", "'maybe'"},
        {",\"stream\":2", "bool_parsing", "('body', 'stream')", "2"},
        {",\"ignore_eos\":null", "bool_type", "('body', 'ignore_eos')", "None"},
        {",\"ignore_eos\":0.5", "bool_type", "('body', 'ignore_eos')", "0.5"},
        {",\"add_generation_prompt\":[]", "bool_type", "('body', 'add_generation_prompt')", "[]"},
        {",\"logprobs\":\"yes please\"", "bool_parsing", "('body', 'logprobs')", "'yes please'"},
        {",\"stream\":true,\"stream_options\":{\"include_usage\":\"x\"}", "bool_parsing",
            "('body', 'stream_options', 'include_usage')", "'x'"},
        {",\"stream\":true,\"stream_options\":\"x\"", "model_type", "('body', 'stream_options')", "'x'"},
    };
    for (String[] c : cases) {
      // an unknown model too: FastAPI validates the body before the handler looks the model up
      String body = chat(c[0]).replace("kvroute/mock-llm", "no-such-model");
      Rejection r = rejected(Endpoint.CHAT_COMPLETIONS, body);
      assertThat(r.status()).as(c[0]).isEqualTo(400);
      String message = error(r).get("message").asText();
      assertThat(message).as(c[0]).startsWith("1 validation error:\n  {'type': '" + c[1] + "', 'loc': " + c[2])
          .endsWith("'input': " + c[3] + "}\n");
      assertThat(error(r).get("type").asText()).as(c[0]).isEqualTo("Bad Request");
    }
    // echo is Optional[bool] for completions (logprobs is an int there, not checked here)
    assertThat(rejected(Endpoint.COMPLETIONS, "{\"prompt\":\"hi\",\"echo\":\"sometimes\"}").status()).isEqualTo(400);
  }

  @Test
  void seedAndLogprobsThatAreNotIntegersWereReadAsZeroOrTruncatedAndAreNow400() throws Exception {
    String[][] cases = {
        {",\"seed\":\"abc\"", "seed: expected an integer, got \"abc\""},
        {",\"seed\":1.5", "seed: expected an integer, got 1.5"},
        {",\"seed\":99999999999999999999", "seed: expected an integer, got 99999999999999999999"},
        {",\"top_logprobs\":\"x\"", "top_logprobs: expected an integer, got \"x\""},
    };
    for (String[] c : cases) {
      Rejection r = rejected(Endpoint.CHAT_COMPLETIONS, chat(c[0]));
      assertThat(r.status()).as(c[0]).isEqualTo(400);
      assertThat(error(r).get("message").asText()).as(c[0]).isEqualTo(c[1]);
    }
    assertThat(rejected(Endpoint.COMPLETIONS, "{\"prompt\":\"hi\",\"logprobs\":\"x\"}").status()).isEqualTo(400);
    assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"seed\":\"42\",\"max_tokens\":1")).seed()).isEqualTo(42);
    assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"seed\":-3.0,\"max_tokens\":1")).seed()).isEqualTo(-3);
  }

  @Test
  void nAsAStringWasRefusedThoughVllmsPydanticAcceptsIt() throws Exception {
    assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"n\":\"2\",\"max_tokens\":\"3\",\"top_k\":\"5\"")).n())
        .isEqualTo(2);
    assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"n\":true")).n()).isEqualTo(1);
  }

  @Test
  void samplingParamsErrorsAreBadRequestError() throws Exception {
    Rejection n = rejected(Endpoint.CHAT_COMPLETIONS, chat(",\"n\":0"));
    assertThat(error(n).get("message").asText()).isEqualTo("n must be at least 1, got 0.");
    assertThat(error(n).get("type").asText()).isEqualTo("BadRequestError");
    assertThat(error(n).get("param").asText()).isEqualTo("n");
    Rejection zero = rejected(Endpoint.CHAT_COMPLETIONS, chat(",\"max_tokens\":0"));
    assertThat(error(zero).get("message").asText()).isEqualTo("max_tokens must be at least 1, got 0.");
    Rejection min = rejected(Endpoint.CHAT_COMPLETIONS, chat(",\"max_tokens\":2,\"min_tokens\":3"));
    assertThat(error(min).get("message").asText())
        .isEqualTo("min_tokens must be less than or equal to max_tokens=2, got 3.");
  }

  @Test
  void streamOptionsNeedStream() throws Exception {
    Rejection r = rejected(Endpoint.CHAT_COMPLETIONS, chat(",\"stream_options\":{\"include_usage\":true}"));
    assertThat(r.status()).isEqualTo(400);
    assertThat(error(r).get("message").asText()).isEqualTo("Stream options can only be defined when `stream=True`.");
    assertThat(error(r).get("param").asText()).isEqualTo("stream_options");
  }

  @Test
  void promptChecks() throws Exception {
    Rejection empty = rejected(Endpoint.COMPLETIONS, "{\"prompt\":[\"a\",\"\"],\"max_tokens\":1}");
    assertThat(error(empty).get("message").asText()).isEqualTo("The decoder prompt cannot be empty");
    assertThat(error(empty).get("type").asText()).isEqualTo("BadRequestError");
    Rejection vocab = rejected(Endpoint.COMPLETIONS, "{\"prompt\":[1,2000000000],\"max_tokens\":1}");
    assertThat(error(vocab).get("message").asText()).isEqualTo("Token id 2000000000 is out of vocabulary");
    // an unused id inside the range passes, as vLLM compares with the largest id only
    assertThat(valid(Endpoint.COMPLETIONS, "{\"prompt\":[199998],\"max_tokens\":1}").prompts()).hasSize(1);
    Rejection shape = rejected(Endpoint.CHAT_COMPLETIONS, "{\"messages\": \"hi\"}");
    assertThat(error(shape).get("param").asText()).isEqualTo("messages");
    assertThat(error(shape).get("type").asText()).isEqualTo("Bad Request");
    // a mixed batch: the router's parser's shape check answers it
    Rejection batchItem = rejected(Endpoint.COMPLETIONS, "{\"prompt\":[\"a\",[]],\"max_tokens\":1}");
    assertThat(error(batchItem).get("message").asText())
        .isEqualTo("prompt.1: expected a string like the first prompt, got an array");
    assertThat(error(batchItem).get("type").asText()).isEqualTo("Bad Request");
  }

  @Test
  void aBatchOfIdListsIsOnePromptEach() throws Exception {
    GenerationRequest g = valid(Endpoint.COMPLETIONS, "{\"prompt\":[[1,2,3],[4,5,6]],\"max_tokens\":2}");
    assertThat(g.prompts()).hasSize(2);
    assertThat(g.prompts().get(1)).containsExactly(4, 5, 6);
  }

  @Test
  void contextLengthAndTheMocksOutputBound() throws Exception {
    Rejection total = rejected(Endpoint.COMPLETIONS, "{\"prompt\":[" + "1,".repeat(90) + "1],\"max_tokens\":20}");
    assertThat(error(total).get("message").asText()).isEqualTo(
        "This model's maximum context length is 100 tokens. However, you requested 20 output tokens and your"
            + " prompt contains 91 input tokens, for a total of 111 tokens. Please reduce the length of the input"
            + " prompt or the number of requested output tokens.");
    assertThat(error(total).get("param").asText()).isEqualTo("input_tokens");
    Rejection chatTooLong = rejected(Endpoint.CHAT_COMPLETIONS,
        "{\"messages\":[{\"role\":\"user\",\"content\":\"" + "word ".repeat(200) + "\"}]}");
    assertThat(error(chatTooLong).get("message").asText())
        .startsWith("This model's maximum context length is 100 tokens. However, your request has ")
        .endsWith(" input tokens. Please reduce the length of the input messages.");
    Rejection bound = rejected(Endpoint.COMPLETIONS, "{\"prompt\":[1],\"max_tokens\":50,\"n\":100}");
    assertThat(error(bound).get("message").asText()).contains("(max_num_seqs x max_model_len = 4000)");
    assertThat(error(bound).get("param").asText()).isEqualTo("n");
  }

  // ---- break-test findings: priority, n, Content-Type ------------------------------------------

  @Test
  void badBodyPriorityWasAcceptedAndIsNow400WithFastApisValidationText() throws Exception {
    String[][] cases = {
        {"\"x\"", "int_parsing", "unable to parse string as an integer", "'x'"},
        {"1e99", "int_parsing_size", "exceeded maximum size", "1e+99"},
        {"1.5", "int_from_float", "got a number with a fractional part", "1.5"},
        {"null", "int_type", "Input should be a valid integer", "None"}};
    for (String[] c : cases) {
      for (String body : List.of(chat(",\"priority\":" + c[0]),
          "{\"model\":\"nope\",\"prompt\":\"hi\",\"priority\":" + c[0] + "}")) { // before the model's 404
        Endpoint e = body.contains("prompt") ? Endpoint.COMPLETIONS : Endpoint.CHAT_COMPLETIONS;
        Rejection r = rejected(e, body);
        assertThat(r.status()).as(body).isEqualTo(400);
        assertThat(error(r).get("type").asText()).as(body).isEqualTo("Bad Request");
        assertThat(error(r).get("param").isNull()).as(body).isTrue();
        assertThat(error(r).get("message").asText()).as(body)
            .startsWith("1 validation error:\n  {'type': '" + c[1] + "', 'loc': ('body', 'priority'), 'msg': '")
            .contains(c[2]).endsWith("'input': " + c[3] + "}\n");
      }
    }
  }

  @Test
  void integerPrioritiesAreAcceptedAndIgnoredAsVllmV1FcfsDoes() throws Exception {
    for (String p : List.of("0", "-5", "7", "true", "\"3\"", "2.0", "99999999999999999999")) {
      assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"priority\":" + p + ",\"max_tokens\":2")).maxTokens())
          .as(p).isEqualTo(2);
    }
  }

  @Test
  void nAboveVllmsMaxNSequencesWasRunAndIsNow400() throws Exception {
    Rejection r = rejected(Endpoint.CHAT_COMPLETIONS, chat(",\"n\":100000,\"max_tokens\":1"));
    assertThat(r.status()).isEqualTo(400);
    assertThat(error(r).get("type").asText()).isEqualTo("BadRequestError");
    assertThat(error(r).get("message").asText()).isEqualTo("n must be at most 16384, got 100000. To increase this"
        + " limit, set the VLLM_MAX_N_SEQUENCES environment variable.");
    assertThat(rejected(Endpoint.COMPLETIONS, "{\"prompt\":\"hi\",\"n\":16385,\"max_tokens\":1}").status())
        .isEqualTo(400);
    assertThat(valid(Endpoint.CHAT_COMPLETIONS, chat(",\"n\":8,\"max_tokens\":1")).n()).isEqualTo(8);
  }

  @Test
  void nonJsonContentTypeWasAcceptedAndIsNow400AsFastApiAnswersIt() throws Exception {
    byte[] body = chat(",\"max_tokens\":2").getBytes(StandardCharsets.UTF_8);
    for (String type : List.of("text/plain", "application/x-www-form-urlencoded", "text/json", "multipart/form-data")) {
      Rejection r = catchThrowableOfType(Rejection.class,
          () -> v.validate(Endpoint.CHAT_COMPLETIONS, body, name -> name.equals("content-type") ? type : null));
      assertThat(r).as(type).isNotNull();
      assertThat(r.status()).as(type).isEqualTo(400);
      assertThat(error(r).get("message").asText()).as(type)
          .isEqualTo("Input should be a valid dictionary or object to extract fields from");
    }
    for (String type : List.of("application/json", "Application/JSON; charset=utf-8", "application/foo+json", "")) {
      assertThat(v.validate(Endpoint.CHAT_COMPLETIONS, body, name -> name.equals("content-type") ? type : null)
          .maxTokens()).as(type).isEqualTo(2);
    }
  }
}
