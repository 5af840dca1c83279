package dev.kvroute.engine.server;

import static dev.kvroute.engine.server.Http.events;
import static dev.kvroute.engine.server.Http.json;
import static dev.kvroute.engine.server.Http.metric;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.model.EngineConfig.SchedulerKind;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The mock engine through real sockets: vLLM's wire format, errors, prefix cache, eviction, aborts. */
class MockEngineServerIT {
  /** 10000 prompt tokens/s + 20 ms per request; 100 tokens/s decode. */
  static final CostModel COST = CostModel.linear(10_000, 0.020, 100);

  MockEngineServer server;

  @AfterEach
  void close() {
    if (server != null) {
      server.close();
    }
  }

  MockEngineServer start(EngineConfig engine, boolean details) {
    server = MockEngineServer.start(MockEngineOptions.builder()
        .engine(engine).timeScale(100).enablePromptTokensDetails(details).seed(7).build());
    return server;
  }

  static EngineConfig.Builder engine() {
    return EngineConfig.builder().cost(COST);
  }

  static String words(long seed, int n) {
    SingleTokenVocabulary v = SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());
    SplittableRandom r = new SplittableRandom(seed);
    return IntStream.range(0, n).mapToObj(i -> v.word(r.nextInt(v.size()))).collect(Collectors.joining());
  }

  static String chat(String content, int maxTokens, String extra) {
    return "{\"model\":\"" + MockEngineOptions.DEFAULT_MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":"
        + Json.quote(content) + "}],\"max_tokens\":" + maxTokens + ",\"ignore_eos\":true" + extra + "}";
  }

  @Test
  void streamingChatIsFramedAsVllmFramesIt() throws Exception {
    start(engine().build(), true);
    HttpResponse<String> res = Http.post(server.url() + "/v1/chat/completions",
        chat("hello there", 3, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}"),
        "X-Request-Id", "abc123");
    assertThat(res.statusCode()).isEqualTo(200);
    assertThat(res.headers().firstValue("content-type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/event-stream"));
    assertThat(res.headers().firstValue("x-request-id")).hasValue("abc123");
    List<String> ev = events(res.body());
    assertThat(ev).hasSize(6);
    assertThat(ev.get(5)).isEqualTo("[DONE]");
    JsonNode role = json(ev.get(0));
    assertThat(role.get("id").asText()).isEqualTo("chatcmpl-abc123");
    assertThat(role.get("object").asText()).isEqualTo("chat.completion.chunk");
    assertThat(role.get("model").asText()).isEqualTo(MockEngineOptions.DEFAULT_MODEL);
    assertThat(role.get("choices").get(0).toString())
        .isEqualTo("{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}");
    for (int i = 1; i <= 3; i++) {
      JsonNode c = json(ev.get(i));
      assertThat(c.get("id").asText()).isEqualTo("chatcmpl-abc123");
      assertThat(c.get("created").asLong()).isEqualTo(role.get("created").asLong());
      JsonNode choice = c.get("choices").get(0);
      assertThat(choice.get("delta").get("content").asText()).startsWith(" ");
      assertThat(choice.get("delta").has("role")).isFalse();
      if (i < 3) {
        assertThat(choice.get("finish_reason").isNull()).isTrue();
        assertThat(choice.has("stop_reason")).isFalse();
      } else {
        assertThat(choice.get("finish_reason").asText()).isEqualTo("length");
        assertThat(choice.get("stop_reason").isNull()).isTrue();
      }
      assertThat(c.has("usage")).isFalse();
    }
    JsonNode usage = json(ev.get(4));
    assertThat(usage.get("choices").size()).isZero();
    assertThat(usage.get("usage").get("completion_tokens").asInt()).isEqualTo(3);
    int prompt = usage.get("usage").get("prompt_tokens").asInt();
    assertThat(prompt).isEqualTo(PromptTokenizer.create(Tokenizer.defaultTokenizer()).encode("<|im_start|>user\n").length
        + 2 + PromptTokenizer.create(Tokenizer.defaultTokenizer()).encode("<|im_end|>\n").length
        + PromptTokenizer.create(Tokenizer.defaultTokenizer()).encode(PromptTokenizer.GENERATION_PROMPT).length);
    assertThat(usage.get("usage").get("total_tokens").asInt()).isEqualTo(prompt + 3);
    assertThat(usage.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt()).isZero();
  }

  @Test
  void streamingWithoutStreamOptionsHasNoUsageChunkAndContinuousUsageOnEveryChunk() throws Exception {
    start(engine().build(), false);
    List<String> plain = events(Http.post(server.url() + "/v1/chat/completions",
        chat("hi", 2, ",\"stream\":true")).body());
    assertThat(plain).hasSize(4); // role, 2 tokens, [DONE]
    List<String> cont = events(Http.post(server.url() + "/v1/chat/completions",
        chat("hi", 2, ",\"stream\":true,\"stream_options\":{\"include_usage\":false,\"continuous_usage_stats\":true}")).body());
    assertThat(cont).hasSize(4);
    assertThat(json(cont.get(1)).get("usage").get("completion_tokens").asInt()).isEqualTo(1);
    assertThat(json(cont.get(2)).get("usage").get("completion_tokens").asInt()).isEqualTo(2);
  }

  @Test
  void completionsStreamHasNoRoleChunkAndTextDeltas() throws Exception {
    start(engine().build(), false);
    HttpResponse<String> res = Http.post(server.url() + "/v1/completions",
        "{\"prompt\":\"Once upon a time\",\"max_tokens\":2,\"stream\":true,\"ignore_eos\":true,\"stream_options\":{}}");
    List<String> ev = events(res.body());
    assertThat(ev).hasSize(4);
    JsonNode first = json(ev.get(0));
    assertThat(first.get("object").asText()).isEqualTo("text_completion");
    assertThat(first.get("id").asText()).startsWith("cmpl-");
    assertThat(first.get("choices").get(0).get("text").asText()).startsWith(" ");
    assertThat(first.get("choices").get(0).get("finish_reason").isNull()).isTrue();
    assertThat(json(ev.get(1)).get("choices").get(0).get("finish_reason").asText()).isEqualTo("length");
    assertThat(json(ev.get(2)).get("usage").get("completion_tokens").asInt()).isEqualTo(2);
    assertThat(ev.get(3)).isEqualTo("[DONE]");
  }

  @Test
  void nonStreamingResponsesAndNChoices() throws Exception {
    start(engine().build(), false);
    JsonNode chat = json(Http.post(server.url() + "/v1/chat/completions",
        chat("tell me", 5, ",\"n\":2")).body());
    assertThat(chat.get("object").asText()).isEqualTo("chat.completion");
    assertThat(chat.get("choices")).hasSize(2);
    JsonNode c0 = chat.get("choices").get(0);
    assertThat(c0.get("message").get("role").asText()).isEqualTo("assistant");
    String text = c0.get("message").get("content").asText();
    assertThat(Tokenizer.defaultTokenizer().encode(text)).hasSize(5);
    assertThat(c0.get("finish_reason").asText()).isEqualTo("length");
    assertThat(chat.get("choices").get(1).get("index").asInt()).isEqualTo(1);
    assertThat(chat.get("choices").get(1).get("message").get("content").asText()).isNotEqualTo(text);
    assertThat(chat.get("usage").get("completion_tokens").asInt()).isEqualTo(10);
    assertThat(chat.get("usage").get("prompt_tokens_details").isNull()).isTrue();

    // The same request gives the same reply.
    JsonNode again = json(Http.post(server.url() + "/v1/chat/completions", chat("tell me", 5, ",\"n\":2")).body());
    assertThat(again.get("choices").get(0).get("message").get("content").asText()).isEqualTo(text);

    JsonNode cmpl = json(Http.post(server.url() + "/v1/completions",
        "{\"prompt\":[\"a b c\",\"d e f\"],\"ignore_eos\":true}").body());
    assertThat(cmpl.get("object").asText()).isEqualTo("text_completion");
    assertThat(cmpl.get("choices")).hasSize(2);
    assertThat(cmpl.get("usage").get("completion_tokens").asInt()).isEqualTo(32); // default max_tokens 16
  }

  @Test
  void withoutIgnoreEosRepliesMayStopEarlyButRespectMinTokens() throws Exception {
    server = MockEngineServer.start(MockEngineOptions.builder().engine(engine().build())
        .timeScale(100).meanOutputTokens(3).build());
    int stops = 0;
    for (int i = 0; i < 10; i++) {
      String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"q" + i + "\"}],\"max_tokens\":50}";
      JsonNode r = json(Http.post(server.url() + "/v1/chat/completions", body).body());
      int tokens = r.get("usage").get("completion_tokens").asInt();
      String reason = r.get("choices").get(0).get("finish_reason").asText();
      assertThat(reason).isEqualTo(tokens < 50 ? "stop" : "length");
      stops += reason.equals("stop") ? 1 : 0;
      JsonNode m = json(Http.post(server.url() + "/v1/chat/completions",
          "{\"messages\":[{\"role\":\"user\",\"content\":\"q" + i + "\"}],\"max_tokens\":50,\"min_tokens\":20}").body());
      assertThat(m.get("usage").get("completion_tokens").asInt()).isGreaterThanOrEqualTo(20);
    }
    assertThat(stops).isPositive();
  }

  @Test
  void errorsAreVllmShaped() throws Exception {
    start(engine().maxModelLen(100).build(), false);
    String url = server.url();
    HttpResponse<String> r = Http.post(url + "/v1/chat/completions",
        "{\"model\":\"nope\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(json(r.body()).get("error").get("message").asText()).isEqualTo("The model `nope` does not exist.");
    assertThat(json(r.body()).get("error").get("type").asText()).isEqualTo("NotFoundError");
    assertThat(json(r.body()).get("error").get("code").asInt()).isEqualTo(404);

    r = Http.post(url + "/v1/completions", "{\"prompt\":[" + "1,".repeat(90) + "1],\"max_tokens\":20}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("message").asText()).isEqualTo(
        "This model's maximum context length is 100 tokens. However, you requested 20 output tokens and your"
            + " prompt contains 91 input tokens, for a total of 111 tokens. Please reduce the length of the input"
            + " prompt or the number of requested output tokens.");
    assertThat(json(r.body()).get("error").get("type").asText()).isEqualTo("BadRequestError");

    r = Http.post(url + "/v1/chat/completions", chat("x", 2, ",\"stream_options\":{\"include_usage\":true}"));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("message").asText())
        .isEqualTo("Stream options can only be defined when `stream=True`.");

    r = Http.post(url + "/v1/chat/completions", "{\"messages\": [");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("type").asText()).isEqualTo("Bad Request");

    r = Http.post(url + "/v1/chat/completions", "{\"messages\": \"hi\"}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("param").asText()).isEqualTo("messages");

    assertThat(Http.get(url + "/v1/nothing").statusCode()).isEqualTo(404);
    assertThat(Http.get(url + "/v1/chat/completions").statusCode()).isEqualTo(405);
  }

  @Test
  void modelsHealthVersionAndMetricsEndpoints() throws Exception {
    start(engine().numGpuBlocks(1000).build(), false);
    JsonNode models = json(Http.get(server.url() + "/v1/models").body());
    assertThat(models.get("object").asText()).isEqualTo("list");
    assertThat(models.get("data").get(0).get("id").asText()).isEqualTo(MockEngineOptions.DEFAULT_MODEL);
    assertThat(models.get("data").get(0).get("owned_by").asText()).isEqualTo("vllm");
    assertThat(models.get("data").get(0).get("max_model_len").asInt()).isEqualTo(16000);
    HttpResponse<String> health = Http.get(server.url() + "/health");
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(health.body()).isEmpty();
    assertThat(Http.get(server.url() + "/version").body()).contains("version");

    Http.post(server.url() + "/v1/chat/completions", chat("metrics please", 4, ""));
    String m = Http.get(server.url() + "/metrics").body();
    String labels = "engine=\"0\",model_name=\"" + MockEngineOptions.DEFAULT_MODEL + "\"";
    String model = "model_name=\"" + MockEngineOptions.DEFAULT_MODEL + "\"";
    // as prometheus_client writes them: counter families named with _total, labels sorted by name
    assertThat(m).contains("# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n")
        .contains("# TYPE vllm:prompt_tokens_total counter\n")
        .contains("# TYPE vllm:request_success_total counter\n")
        .contains("# TYPE vllm:time_to_first_token_seconds histogram\n")
        .contains("vllm:num_requests_running{" + labels + "} 0.0\n")
        .contains("vllm:num_requests_waiting{" + labels + "} 0.0\n")
        .contains("vllm:kv_cache_usage_perc{" + labels + "} 0.0\n")
        .contains("vllm:request_success_total{engine=\"0\",finished_reason=\"length\"," + model + "} 1.0\n")
        .contains("vllm:request_success_total{engine=\"0\",finished_reason=\"abort\"," + model + "} 0.0\n")
        .contains("vllm:generation_tokens_total{" + labels + "} 4.0\n")
        .contains("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.001\"," + model + "} 0.0\n")
        .contains("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"," + model + "} 1.0\n")
        .contains("vllm:time_to_first_token_seconds_count{" + labels + "} 1.0\n")
        .contains("vllm:inter_token_latency_seconds_count{" + labels + "} 3.0\n")
        .contains("vllm:e2e_request_latency_seconds_count{" + labels + "} 1.0\n")
        .contains("vllm:request_prefill_time_seconds_count{" + labels + "} 1.0\n")
        .contains("vllm:cache_config_info{block_size=\"16\",")
        .contains("num_gpu_blocks=\"1000\"")
        .contains("vllm:prefix_cache_queries_total{" + labels + "} ")
        .contains("vllm:prefix_cache_hits_total{" + labels + "} 0.0\n");
    // Model seconds: the ITL is exactly 10 ms whatever the time scale.
    assertThat(metric(m, "vllm:inter_token_latency_seconds_sum", "")).isCloseTo(0.03, within(1e-9));
  }

  @Test
  void sameChatTwiceReportsItsFullBlockPrefixAsCachedAndPrefillsLess() throws Exception {
    start(engine().scheduler(SchedulerKind.FCFS_PREFILL).build(), true);
    String body = chat(words(1, 300), 4, "");
    JsonNode first = json(Http.post(server.url() + "/v1/chat/completions", body).body());
    int prompt = first.get("usage").get("prompt_tokens").asInt();
    assertThat(first.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt()).isZero();
    double prefill1 = metric(server.url(), "vllm:request_prefill_time_seconds_sum");
    assertThat(prefill1).isCloseTo(0.020 + prompt / 10_000.0, within(1e-9));

    JsonNode second = json(Http.post(server.url() + "/v1/chat/completions", body).body());
    int cached = second.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
    assertThat(cached).isEqualTo((prompt - 1) / 16 * 16);
    double prefill2 = metric(server.url(), "vllm:request_prefill_time_seconds_sum") - prefill1;
    assertThat(prefill2).isCloseTo(0.020 + (prompt - cached) / 10_000.0, within(1e-9));
    assertThat(prefill2).isLessThan(prefill1);
    String m = Http.get(server.url() + "/metrics").body();
    assertThat(metric(m, "vllm:prefix_cache_hits_total", "")).isEqualTo(cached);
    assertThat(metric(m, "vllm:prefix_cache_queries_total", "")).isEqualTo(2.0 * prompt);
  }

  @Test
  void nextTurnFindsPromptAndReplyOfThePreviousTurnCached() throws Exception {
    start(engine().build(), true);
    String u1 = words(2, 100);
    JsonNode t1 = json(Http.post(server.url() + "/v1/chat/completions", chat(u1, 40, "")).body());
    String reply = t1.get("choices").get(0).get("message").get("content").asText();
    int p1 = t1.get("usage").get("prompt_tokens").asInt();
    String turn2 = "{\"messages\":[{\"role\":\"user\",\"content\":" + Json.quote(u1) + "},"
        + "{\"role\":\"assistant\",\"content\":" + Json.quote(reply) + "},"
        + "{\"role\":\"user\",\"content\":\"and then?\"}],\"max_tokens\":2}";
    JsonNode t2 = json(Http.post(server.url() + "/v1/chat/completions", turn2).body());
    // KV exists for turn 1's prompt and all but its last generated token.
    int expected = (p1 + 40 - 1) / 16 * 16;
    assertThat(t2.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt()).isEqualTo(expected);
  }

  @Test
  void evictsLeastRecentlyUsedPrefixWhenCapacityIsExceeded() throws Exception {
    // 7 blocks of 16. Each prompt: 33 token ids = 2 full blocks + 1; 3 blocks while running, 2 after.
    start(engine().numGpuBlocks(7).maxModelLen(112).build(), true);
    String[] prompts = new String[4];
    for (int i = 0; i < 4; i++) {
      int base = 1000 * (i + 1);
      prompts[i] = IntStream.range(base, base + 33).mapToObj(Integer::toString).collect(Collectors.joining(","));
    }
    String a = prompts[0];
    String b = prompts[1];
    String c = prompts[2];
    String d = prompts[3];
    assertThat(cachedTokens(a)).isZero();
    assertThat(cachedTokens(b)).isZero();
    assertThat(cachedTokens(c)).isZero();
    assertThat(cachedTokens(a)).isEqualTo(32); // a becomes the most recently used
    assertThat(metric(server.url(), "kvroute_mock_evicted_blocks_total")).isZero();
    assertThat(cachedTokens(d)).isZero(); // needs 3 blocks, 1 free: evicts b's two blocks
    assertThat(metric(server.url(), "kvroute_mock_evicted_blocks_total")).isEqualTo(2);
    assertThat(cachedTokens(a)).isEqualTo(32);
    assertThat(cachedTokens(c)).isEqualTo(32);
    assertThat(cachedTokens(b)).isZero();
  }

  private int cachedTokens(String tokenIds) throws Exception {
    JsonNode r = json(Http.post(server.url() + "/v1/completions",
        "{\"prompt\":[" + tokenIds + "],\"max_tokens\":1,\"ignore_eos\":true}").body());
    return r.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt();
  }

  @Test
  void clientDisconnectMidStreamAbortsAtOnceAndReleasesBlocks() throws Exception {
    // At time scale 100 the 20,000 tokens took 4 wall s: on a busy machine the request could end by
    // length before the close reached the engine. At 1 they take 400 s.
    server = MockEngineServer.start(MockEngineOptions.builder().engine(engine().build()).timeScale(1).seed(7).build());
    try (Http.Conn conn = new Http.Conn(server.url(), 10_000)) {
      conn.send("POST", "/v1/chat/completions", chat("stream forever", 20_000, ",\"stream\":true"));
      Http.Raw r = conn.read(3);
      assertThat(r.status).isEqualTo(200);
      assertThat(r.chunks).hasSize(3);
      assertThat(server.stats().running()).isEqualTo(1);
      assertThat(server.stats().usedBlocks()).isPositive();
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> server.stats().running() == 0);
    assertThat(server.stats().usedBlocks()).isZero();
    // the abort is counted by the engine's metrics, which a scrape may read just before the count (it
    // failed once on a loaded machine with running() already 0): wait for it, then check it is the only end
    await().atMost(Duration.ofSeconds(10)).until(() -> metric(Http.get(server.url() + "/metrics").body(),
        "vllm:request_success_total", "finished_reason=\"abort\"") == 1.0);
    String m = Http.get(server.url() + "/metrics").body();
    assertThat(metric(m, "vllm:request_success_total", "finished_reason=\"abort\"")).isEqualTo(1.0);
    assertThat(metric(m, "vllm:request_success_total", "finished_reason=\"length\"")).isZero();
  }

  @Test
  void tokenizeMatchesTheUsageCount() throws Exception {
    start(engine().build(), false);
    String msgs = "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"}]";
    JsonNode t = json(Http.post(server.url() + "/tokenize", msgs + "}").body());
    JsonNode r = json(Http.post(server.url() + "/v1/chat/completions", msgs + ",\"max_tokens\":1}").body());
    assertThat(t.get("count").asInt()).isEqualTo(r.get("usage").get("prompt_tokens").asInt());
    JsonNode d = json(Http.post(server.url() + "/detokenize", "{\"tokens\":" + t.get("tokens") + "}").body());
    assertThat(d.get("prompt").asText()).isEqualTo("<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  }

  @Test
  void tokenizeAddGenerationPromptMaybeWasAcceptedAndIsNow400AsPydanticReadsIt() throws Exception {
    start(engine().build(), false);
    String msgs = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";
    int without = json(Http.post(server.url() + "/tokenize", msgs + ",\"add_generation_prompt\":false}").body())
        .get("count").asInt();
    for (String off : new String[] {"\"off\"", "\"No\"", "0", "\"f\""}) {
      assertThat(json(Http.post(server.url() + "/tokenize", msgs + ",\"add_generation_prompt\":" + off + "}").body())
          .get("count").asInt()).as(off).isEqualTo(without);
    }
    HttpResponse<String> maybe = Http.post(server.url() + "/tokenize", msgs + ",\"add_generation_prompt\":\"maybe\"}");
    assertThat(maybe.statusCode()).isEqualTo(400);
    assertThat(json(maybe.body()).at("/error/message").asText()).contains("'type': 'bool_parsing'")
        .contains("('body', 'add_generation_prompt')");
  }

  @Test
  void detokenizeIdsThatAreNotIntsWereReadAsZeroOrWrappedAndAreNow400() throws Exception {
    start(engine().build(), false);
    for (String bad : new String[] {"\"abc\"", "1.5", "[1]"}) {
      HttpResponse<String> r = Http.post(server.url() + "/detokenize", "{\"tokens\":[100," + bad + "]}");
      assertThat(r.statusCode()).as(bad).isEqualTo(400);
      assertThat(json(r.body()).at("/error/message").asText()).as(bad).startsWith("tokens.1: Input should be a valid integer");
    }
    HttpResponse<String> big = Http.post(server.url() + "/detokenize", "{\"tokens\":[99999999999]}");
    assertThat(big.statusCode()).isEqualTo(400);
    assertThat(json(big.body()).at("/error/message").asText()).isEqualTo("Unknown token for decoding: 99999999999");
    assertThat(json(Http.post(server.url() + "/detokenize", "{\"tokens\":[\"100\",100.0]}").body()).get("prompt").asText())
        .isEqualTo(json(Http.post(server.url() + "/detokenize", "{\"tokens\":[100,100]}").body()).get("prompt").asText());
  }

  @Test
  void fleetRunsIndependentReplicas() throws Exception {
    try (MockEngineFleet fleet = MockEngineFleet.start(
        MockEngineOptions.builder().engine(engine().build()).timeScale(100).enablePromptTokensDetails(true).build(), 2)) {
      assertThat(fleet.urls()).hasSize(2).doesNotHaveDuplicates();
      String body = chat(words(3, 100), 1, "");
      JsonNode a1 = json(Http.post(fleet.urls().get(0) + "/v1/chat/completions", body).body());
      JsonNode b1 = json(Http.post(fleet.urls().get(1) + "/v1/chat/completions", body).body());
      JsonNode a2 = json(Http.post(fleet.urls().get(0) + "/v1/chat/completions", body).body());
      assertThat(a1.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt()).isZero();
      assertThat(b1.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt()).isZero();
      assertThat(a2.get("usage").get("prompt_tokens_details").get("cached_tokens").asInt()).isPositive();
    }
  }

  @Test
  void emptyPromptIsVllms400NotA500() throws Exception {
    start(engine().build(), false);
    String url = server.url();
    for (String body : List.of("{\"prompt\":\"\",\"max_tokens\":1}", "{\"prompt\":[\"a\",\"\"],\"max_tokens\":1}")) {
      HttpResponse<String> r = Http.post(url + "/v1/completions", body);
      assertThat(r.statusCode()).as(body).isEqualTo(400);
      assertThat(json(r.body()).get("error").get("message").asText()).isEqualTo("The decoder prompt cannot be empty");
      assertThat(json(r.body()).get("error").get("type").asText()).isEqualTo("BadRequestError");
    }
    assertThat(server.stats().running() + server.stats().waiting()).isZero();
  }

  @Test
  void malformedJsonInsideTheSkippedPromptIsStillAJsonDecodeError() throws Exception {
    start(engine().build(), false);
    String url = server.url();
    // the engine reads sampling fields without a tree of the prompt, but still checks all of it
    for (String[] c : new String[][] {
        {"/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},],\"max_tokens\":1}"},
        {"/v1/completions", "{\"prompt\":[1,2,x],\"max_tokens\":1}"},
        {"/v1/completions", "{\"prompt\":[1,2,[3,}"}}) {
      HttpResponse<String> r = Http.post(url + c[0], c[1]);
      assertThat(r.statusCode()).as(c[1]).isEqualTo(400);
      assertThat(json(r.body()).get("error").get("message").asText()).as(c[1]).startsWith("JSON decode error");
    }
    // a batch of id lists is still a batch: one choice per prompt
    HttpResponse<String> r =
        Http.post(url + "/v1/completions", "{\"prompt\":[[1,2,3],[4,5,6]],\"max_tokens\":2,\"ignore_eos\":true}");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(json(r.body()).get("choices")).hasSize(2);
    assertThat(json(r.body()).get("usage").get("prompt_tokens").asInt()).isEqualTo(6);
  }

  @Test
  void samplingKnobsOfTheWrongTypeAre400() throws Exception {
    start(engine().build(), false);
    HttpResponse<String> bad = Http.post(server.url() + "/v1/chat/completions", chat("x", 2, ",\"temperature\":\"hot\""));
    assertThat(bad.statusCode()).isEqualTo(400);
    assertThat(json(bad.body()).get("error").get("message").asText()).contains("temperature");
    assertThat(Http.post(server.url() + "/v1/chat/completions", chat("x", 2, ",\"top_p\":\"0.5\",\"top_k\":5"))
        .statusCode()).as("lax: a numeric string is a number").isEqualTo(200);
  }

  @Test
  void tokenIdBeyondTheVocabularyIsVllms400() throws Exception {
    start(engine().build(), false);
    HttpResponse<String> r = Http.post(server.url() + "/v1/completions", "{\"prompt\":[1,2000000000],\"max_tokens\":1}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("message").asText()).isEqualTo("Token id 2000000000 is out of vocabulary");
    // an unused id inside the vocabulary's range is accepted, as vLLM compares with the largest id only
    assertThat(Http.post(server.url() + "/v1/completions", "{\"prompt\":[199998],\"max_tokens\":1}").statusCode())
        .isEqualTo(200);
  }

  @Test
  void nBelowOneAndZeroMaxTokensAreSamplingParamsErrors() throws Exception {
    start(engine().build(), false);
    HttpResponse<String> r = Http.post(server.url() + "/v1/chat/completions", chat("x", 2, ",\"n\":0"));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("message").asText()).isEqualTo("n must be at least 1, got 0.");
    assertThat(json(r.body()).get("error").get("type").asText()).isEqualTo("BadRequestError");
    r = Http.post(server.url() + "/v1/chat/completions", chat("x", 0, ""));
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("message").asText()).isEqualTo("max_tokens must be at least 1, got 0.");
  }

  @Test
  void everyResponseCarriesUvicornsDateAndServerHeaders() throws Exception {
    start(engine().build(), false);
    String url = server.url();
    List<HttpResponse<String>> responses = List.of(
        Http.get(url + "/health"),
        Http.get(url + "/v1/models"),
        Http.get(url + "/v1/nothing"),
        Http.post(url + "/v1/chat/completions", chat("x", 1, "")),
        Http.post(url + "/v1/chat/completions", chat("x", 1, ",\"stream\":true")),
        Http.post(url + "/v1/completions", "{\"prompt\":\"\"}"));
    for (HttpResponse<String> r : responses) {
      assertThat(r.headers().firstValue("server")).as(r.uri() + " " + r.statusCode()).hasValue("uvicorn");
      assertThat(r.headers().firstValue("date")).as(r.uri() + " " + r.statusCode())
          .hasValueSatisfying(d -> assertThat(d).matches("[A-Z][a-z]{2}, \\d{2} [A-Z][a-z]{2} \\d{4} \\d{2}:\\d{2}:\\d{2} GMT"));
    }
  }

  @Test
  void http10StreamIsCloseDelimitedNotChunked() throws Exception {
    start(engine().build(), false);
    byte[] body = chat("x", 2, ",\"stream\":true").getBytes(java.nio.charset.StandardCharsets.UTF_8);
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", server.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.0\r\nContent-Type: application/json\r\n"
          + "Content-Length: " + body.length + "\r\n\r\n").getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      s.getOutputStream().write(body);
      String all = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      String head = all.substring(0, all.indexOf("\r\n\r\n")).toLowerCase(java.util.Locale.ROOT);
      assertThat(head).doesNotContain("transfer-encoding").contains("connection: close");
      assertThat(all.substring(all.indexOf("\r\n\r\n") + 4)).startsWith("data: {").endsWith("data: [DONE]\n\n");
    }
  }

  @Test
  void tokenizerIsLoadedAndWarmedUpBeforeTheEngineListens() {
    server = MockEngineServer.start(MockEngineOptions.builder().engine(engine().build()).tokenizer("p50k_base").build());
    assertThat(MockEngineServer.sharedPromptTokenizer("p50k_base").cachedPieces())
        .as("pieces the warm-up request encoded before any request arrived").isPositive();
  }

  @Test
  void unparseableOrOversizedRequestHeadIsUvicornsPlainText400() throws Exception {
    start(engine().build(), false);
    for (String head : List.of("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + "a".repeat(20_000) + "\r\n\r\n",
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")) {
      try (java.net.Socket s = new java.net.Socket("127.0.0.1", server.port())) {
        s.setSoTimeout(10_000);
        s.getOutputStream().write(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        String all = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(all).as(head.substring(0, 20)).startsWith("HTTP/1.1 400 Bad Request\r\n")
            .contains("content-type: text/plain; charset=utf-8").endsWith("\r\n\r\nInvalid HTTP request received.");
      }
    }
  }

  @Test
  void hugeNTimesMaxTokensIsRefusedInsteadOfExhaustingTheHeap() throws Exception {
    start(engine().maxNumSeqs(4).maxModelLen(1000).build(), false);
    HttpResponse<String> r = Http.post(server.url() + "/v1/chat/completions",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":16384,\"ignore_eos\":true}");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("message").asText()).contains("(max_num_seqs x max_model_len = 4000)");
    assertThat(Http.post(server.url() + "/v1/chat/completions", chat("x", 1000 - 30, ",\"n\":4")).statusCode())
        .isEqualTo(200);
  }
}
