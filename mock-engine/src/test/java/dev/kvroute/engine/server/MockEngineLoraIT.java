package dev.kvroute.engine.server;

import static dev.kvroute.engine.server.Http.json;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The mock engine serving several names and LoRA adapters, as vLLM with {@code --enable-lora}. */
class MockEngineLoraIT {
  private static final CostModel COST = CostModel.linear(10_000, 0.020, 100);
  private MockEngineServer server;

  @AfterEach
  void close() {
    if (server != null) {
      server.close();
    }
  }

  private MockEngineServer start(int maxLoras, double loadSeconds, boolean runtime) {
    return start(maxLoras, loadSeconds, runtime, 100);
  }

  private MockEngineServer start(int maxLoras, double loadSeconds, boolean runtime, double timeScale) {
    Map<String, String> adapters = new LinkedHashMap<>();
    adapters.put("ad-x", "/loras/x");
    adapters.put("ad-y", "/loras/y");
    server = MockEngineServer.start(MockEngineOptions.builder()
        .modelName("base-b")
        .models(new ModelOptions(List.of("base-b-alias"), adapters, maxLoras, runtime, loadSeconds))
        .engine(EngineConfig.builder().cost(COST).maxModelLen(4096).build())
        .timeScale(timeScale)
        .enablePromptTokensDetails(true)
        .seed(3)
        .build());
    return server;
  }

  private static String chat(String model, String content) {
    return "{\"model\":" + Json.quote(model) + ",\"messages\":[{\"role\":\"user\",\"content\":"
        + Json.quote(content) + "}],\"max_tokens\":2,\"ignore_eos\":true}";
  }

  private static JsonNode post(MockEngineServer s, String model, String content) throws Exception {
    HttpResponse<String> r = Http.post(s.url() + "/v1/chat/completions", chat(model, content));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return json(r.body());
  }

  private static String longText() {
    return MockEngineServerIT.words(11, 400);
  }

  @Test
  void modelsListsEveryServedNameThenEachAdapterWithItsParent() throws Exception {
    start(2, 0.1, false);
    JsonNode data = json(Http.get(server.url() + "/v1/models").body()).get("data");
    assertThat(data).hasSize(4);
    assertThat(data.get(0).get("id").asText()).isEqualTo("base-b");
    assertThat(data.get(0).get("max_model_len").asInt()).isEqualTo(4096);
    assertThat(data.get(0).get("parent").isNull()).isTrue();
    assertThat(data.get(1).get("id").asText()).isEqualTo("base-b-alias");
    assertThat(data.get(2).get("id").asText()).isEqualTo("ad-x");
    assertThat(data.get(2).get("parent").asText()).isEqualTo("base-b");
    assertThat(data.get(2).get("root").asText()).isEqualTo("/loras/x");
    assertThat(data.get(2).get("max_model_len").isNull()).isTrue();
  }

  @Test
  void anAdapterAnsweresUnderItsNameAndAnAliasUnderTheFirstName() throws Exception {
    start(2, 0.1, false);
    assertThat(post(server, "ad-x", "hi").get("model").asText()).isEqualTo("ad-x");
    assertThat(post(server, "base-b-alias", "hi").get("model").asText()).isEqualTo("base-b");
  }

  @Test
  void anUnservedModelGetsVllmsNotFoundAndIsCounted() throws Exception {
    start(1, 0.1, false);
    HttpResponse<String> r = Http.post(server.url() + "/v1/chat/completions", chat("nope", "hi"));
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(json(r.body()).get("error").toString()).isEqualTo(
        "{\"message\":\"The model `nope` does not exist.\",\"type\":\"NotFoundError\",\"param\":\"model\",\"code\":404}");
    assertThat(Http.metric(server.url(), "kvroute_mock_model_not_found_total")).isEqualTo(1);
  }

  @Test
  void blocksCachedUnderOneAdapterAreNoHitForAnotherNorTheBase() throws Exception {
    start(2, 0.1, false);
    String text = longText();
    post(server, "ad-x", text);
    JsonNode again = post(server, "ad-x", text);
    assertThat(again.at("/usage/prompt_tokens_details/cached_tokens").asInt()).isPositive();
    assertThat(post(server, "ad-y", text).at("/usage/prompt_tokens_details/cached_tokens").asInt()).isZero();
    assertThat(post(server, "base-b", text).at("/usage/prompt_tokens_details/cached_tokens").asInt()).isZero();
    // aliases of the base model share its cache, as in vLLM (the block hash has no model name)
    assertThat(post(server, "base-b-alias", text).at("/usage/prompt_tokens_details/cached_tokens").asInt())
        .isPositive();
  }

  @Test
  void aColdAdapterDelaysItsFirstRequestByItsLoadTime() throws Exception {
    start(1, 2.0, false); // 2 model seconds = 20 ms wall at time scale 100
    post(server, "base-b", "warm the engine up");
    double before = Http.metric(server.url(), "vllm:time_to_first_token_seconds_sum");
    post(server, "ad-x", "x");
    double cold = Http.metric(server.url(), "vllm:time_to_first_token_seconds_sum") - before;
    post(server, "ad-x", "x again");
    double warm = Http.metric(server.url(), "vllm:time_to_first_token_seconds_sum") - before - cold;
    assertThat(cold).isGreaterThanOrEqualTo(2.0);
    assertThat(warm).isLessThan(2.0);
  }

  @Test
  void atMostMaxLorasAdaptersRunAtOnceAndTheOthersWaitTheirTurn() throws Exception {
    start(1, 0.05, false, 1); // real time: x decodes 300 tokens at 100/s, 3 s
    String slow = "{\"model\":\"ad-x\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"max_tokens\":300,"
        + "\"ignore_eos\":true}";
    CompletableFuture<HttpResponse<String>> x = Http.CLIENT.sendAsync(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create(server.url() + "/v1/chat/completions"))
            .header("content-type", "application/json")
            .POST(java.net.http.HttpRequest.BodyPublishers.ofString(slow)).build(),
        HttpResponse.BodyHandlers.ofString());
    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).until(() ->
        Http.get(server.url() + "/metrics").body().contains("running_lora_adapters=\"ad-x\""));
    CompletableFuture<HttpResponse<String>> y = Http.CLIENT.sendAsync(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create(server.url() + "/v1/chat/completions"))
            .header("content-type", "application/json")
            .POST(java.net.http.HttpRequest.BodyPublishers.ofString(chat("ad-y", "y"))).build(),
        HttpResponse.BodyHandlers.ofString());
    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10)).until(() ->
        Http.get(server.url() + "/metrics").body().contains("waiting_lora_adapters=\"ad-y\""));
    assertThat(y).isNotDone();
    assertThat(x.get().statusCode()).isEqualTo(200);
    HttpResponse<String> yr = y.get();
    assertThat(yr.statusCode()).isEqualTo(200);
    assertThat(Http.get(server.url() + "/metrics").body()).contains(
        "vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"\",waiting_lora_adapters=\"\"}");
  }

  @Test
  void runtimeLoadAndUnloadAnswerAsVllmAndChangeWhatIsServed() throws Exception {
    start(2, 0.1, true);
    String url = server.url();
    HttpResponse<String> load = Http.post(url + "/v1/load_lora_adapter", "{\"lora_name\":\"ad-z\",\"lora_path\":\"/loras/z\"}");
    assertThat(load.statusCode()).isEqualTo(200);
    assertThat(load.body()).isEqualTo("Success: LoRA adapter 'ad-z' added successfully.");
    assertThat(Http.post(url + "/v1/load_lora_adapter", "{\"lora_name\":\"ad-z\",\"lora_path\":\"/loras/z\"}")
        .statusCode()).isEqualTo(400);
    // load_inplace: bool, read as pydantic's lax bool ("yes" was read as false by asBoolean)
    assertThat(Http.post(url + "/v1/load_lora_adapter",
        "{\"lora_name\":\"ad-z\",\"lora_path\":\"/loras/z\",\"load_inplace\":\"yes\"}").statusCode()).isEqualTo(200);
    HttpResponse<String> maybe = Http.post(url + "/v1/load_lora_adapter",
        "{\"lora_name\":\"ad-z\",\"lora_path\":\"/loras/z\",\"load_inplace\":\"maybe\"}");
    assertThat(maybe.statusCode()).isEqualTo(400);
    assertThat(json(maybe.body()).at("/error/message").asText()).contains("'type': 'bool_parsing'")
        .contains("('body', 'load_inplace')");
    assertThat(post(server, "ad-z", "hello").get("model").asText()).isEqualTo("ad-z");
    List<String> ids = new ArrayList<>();
    json(Http.get(url + "/v1/models").body()).get("data").forEach(m -> ids.add(m.get("id").asText()));
    assertThat(ids).contains("ad-z");
    HttpResponse<String> unload = Http.post(url + "/v1/unload_lora_adapter", "{\"lora_name\":\"ad-z\"}");
    assertThat(unload.body()).isEqualTo("Success: LoRA adapter 'ad-z' removed successfully.");
    assertThat(Http.post(url + "/v1/chat/completions", chat("ad-z", "hello")).statusCode()).isEqualTo(404);
    HttpResponse<String> again = Http.post(url + "/v1/unload_lora_adapter", "{\"lora_name\":\"ad-z\"}");
    assertThat(again.statusCode()).isEqualTo(404);
    assertThat(json(again.body()).at("/error/message").asText()).isEqualTo("The lora adapter 'ad-z' cannot be found.");
  }

  @Test
  void runtimeUpdatesAreUnknownPathsWithoutTheFlag() throws Exception {
    start(1, 0.1, false);
    HttpResponse<String> r = Http.post(server.url() + "/v1/load_lora_adapter", "{\"lora_name\":\"a\",\"lora_path\":\"/p\"}");
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(r.body()).isEqualTo("{\"detail\":\"Not Found\"}");
  }
}
