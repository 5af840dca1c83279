package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.engine.server.MockEngineServer;
import dev.kvroute.engine.server.ModelOptions;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ModelsConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 13's fleet: 4 mock engines, 2 serving model A, 2 serving model B with LoRA adapters, behind
 * one router that discovers what each serves from its {@code /v1/models}.
 */
@ExtendWith(NettyLeakExtension.class)
final class MultiModelIT {
  static final ObjectMapper JSON = new ObjectMapper();
  static final String A = "model-a";
  static final String B = "model-b";
  static final int MAX_MODEL_LEN_A = 4096;

  static MockEngineOptions.Builder engine(String model, int maxModelLen) {
    return MockEngineOptions.builder()
        .host("127.0.0.1")
        .port(0)
        .modelName(model)
        .engine(EngineConfig.builder().cost(CostModel.linear(20_000, 0.010, 200))
            .kvCapacityTokens(100_000).maxModelLen(maxModelLen).build())
        .timeScale(20)
        .enablePromptTokensDetails(true)
        .seed(5);
  }

  static Map<String, String> adapters() {
    Map<String, String> m = new LinkedHashMap<>();
    for (int i = 0; i < 8; i++) {
      m.put("b-lora-" + i, "/loras/b" + i);
    }
    return m;
  }

  @RegisterExtension
  @Order(1)
  static final ServerExtension<MockEngineFleet> ENGINES_A =
      new ServerExtension<>(() -> MockEngineFleet.start(engine(A, MAX_MODEL_LEN_A).build(), 2));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<MockEngineFleet> ENGINES_B = new ServerExtension<>(() -> MockEngineFleet.start(
      engine(B, 8192).models(new ModelOptions(List.of(), adapters(), 4, true, 0.05)).build(), 2));

  @RegisterExtension
  @Order(3)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(MultiModelIT::startRouter);

  /** The router, once it has read what each of the four engines serves. */
  static KvrouteServer startRouter() {
    KvrouteServer router = router();
    HttpClient client = HttpClient.newHttpClient();
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> {
      String body = client.send(HttpRequest.newBuilder(router.adminUri().resolve("/admin/backends")).GET().build(),
          HttpResponse.BodyHandlers.ofString()).body();
      return !body.contains("\"modelsSource\":\"unknown\"");
    });
    return router;
  }

  static KvrouteServer router() {
    List<BackendConfig> backends = new ArrayList<>();
    List<String> a = ENGINES_A.get().urls();
    List<String> b = ENGINES_B.get().urls();
    backends.add(new BackendConfig(URI.create(a.get(0)), "a0", 0));
    backends.add(new BackendConfig(URI.create(a.get(1)), "a1", 0));
    backends.add(new BackendConfig(URI.create(b.get(0)), "b0", 0));
    backends.add(new BackendConfig(URI.create(b.get(1)), "b1", 0));
    return KvrouteServer.start(ProxyConfig.defaults()
        .withPort(0)
        .withAdminPort(0)
        .withPolicy("cache-aware")
        .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(500), Duration.ofSeconds(2), 2, 1,
            Duration.ZERO))
        .withModels(new ModelsConfig(Duration.ofSeconds(30), 128, true, Map.of("chat-a", A)))
        .withBackends(backends));
  }

  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  static String text(long seed, int words) {
    return ProxyMockEngineIT.words(seed, words);
  }

  static String chat(String model, String content, int maxTokens) throws Exception {
    StringBuilder sb = new StringBuilder("{");
    if (model != null) {
      sb.append("\"model\":").append(JSON.writeValueAsString(model)).append(',');
    }
    sb.append("\"messages\":[{\"role\":\"user\",\"content\":").append(JSON.writeValueAsString(content))
        .append("}],\"max_tokens\":").append(maxTokens).append(",\"ignore_eos\":true}");
    return sb.toString();
  }

  HttpResponse<String> post(URI base, String path, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(60))
        .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  HttpResponse<String> generate(String model, String content) throws Exception {
    return post(ROUTER.get().uri(), "/v1/chat/completions", chat(model, content, 4));
  }

  HttpResponse<String> get(URI base, String path) throws Exception {
    return http.send(HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(30)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** The sum of {@code metric} (any labels) over the engines' {@code /metrics}. */
  double engines(String metric) throws Exception {
    double sum = 0;
    List<MockEngineServer> all = new ArrayList<>(ENGINES_A.get().replicas());
    all.addAll(ENGINES_B.get().replicas());
    for (MockEngineServer s : all) {
      for (String line : get(URI.create(s.url()), "/metrics").body().split("\n")) {
        if (line.startsWith(metric + "{") || line.startsWith(metric + " ")) {
          sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        }
      }
    }
    return sum;
  }

  static int cached(HttpResponse<String> r) throws Exception {
    return JSON.readTree(r.body()).at("/usage/prompt_tokens_details/cached_tokens").asInt();
  }

  @Test
  void theRoutersModelListIsTheUnionWithParentsAndWhoServesEach() throws Exception {
    JsonNode data = JSON.readTree(get(ROUTER.get().uri(), "/v1/models").body()).get("data");
    Map<String, JsonNode> byId = new LinkedHashMap<>();
    data.forEach(c -> byId.put(c.get("id").asText(), c));
    assertThat(byId.keySet()).contains(A, B, "b-lora-0", "b-lora-7");
    assertThat(byId.get(A).get("kvroute_backends").toString()).isEqualTo("[\"a0\",\"a1\"]");
    assertThat(byId.get(A).get("max_model_len").asInt()).isEqualTo(MAX_MODEL_LEN_A);
    assertThat(byId.get("b-lora-3").get("parent").asText()).isEqualTo(B);
    assertThat(byId.get("b-lora-3").get("kvroute_backends").toString()).isEqualTo("[\"b0\",\"b1\"]");
  }

  @Test
  void underLoadNoRequestReachesAReplicaThatDoesNotServeItsModel() throws Exception {
    double notFoundBefore = engines("kvroute_mock_model_not_found_total");
    List<String> models = new ArrayList<>(List.of(A, B));
    adapters().keySet().forEach(models::add);
    List<CompletableFuture<HttpResponse<String>>> sent = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      String model = models.get(i % models.size());
      sent.add(http.sendAsync(HttpRequest.newBuilder(ROUTER.get().uri().resolve("/v1/chat/completions"))
          .timeout(Duration.ofSeconds(60)).header("content-type", "application/json")
          .POST(HttpRequest.BodyPublishers.ofString(chat(model, "session " + (i % 7) + " " + text(i % 7, 300), 8)))
          .build(), HttpResponse.BodyHandlers.ofString()));
    }
    for (int i = 0; i < sent.size(); i++) {
      HttpResponse<String> r = sent.get(i).get();
      String model = models.get(i % models.size());
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      String backend = r.headers().firstValue("x-kvroute-backend").orElseThrow();
      assertThat(backend).isIn(model.equals(A) ? Set.of("a0", "a1") : Set.of("b0", "b1"));
      assertThat(JSON.readTree(r.body()).get("model").asText()).isEqualTo(model);
    }
    assertThat(engines("kvroute_mock_model_not_found_total")).isEqualTo(notFoundBefore).isZero();
  }

  @Test
  void anUnknownModelGetsTheRoutersNotFoundAndNoUpstreamRequest() throws Exception {
    double served = engines("vllm:request_success_total");
    HttpResponse<String> r = generate("no-such-model", "hello");
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(JSON.readTree(r.body()).get("error").toString()).isEqualTo("{\"message\":\"The model `no-such-model`"
        + " does not exist.\",\"type\":\"NotFoundError\",\"param\":\"model\",\"code\":404}");
    assertThat(r.headers().firstValue("x-kvroute-backend")).isEmpty();
    assertThat(engines("kvroute_mock_model_not_found_total")).isZero();
    assertThat(engines("vllm:request_success_total")).isEqualTo(served);
    // a made-up model name never becomes a metric label
    String metrics = get(ROUTER.get().uri(), "/metrics").body();
    assertThat(metrics).doesNotContain("no-such-model")
        .contains("kvroute_model_requests_total{model=\"other\",outcome=\"rejected\"");
  }

  @Test
  void metricsBreakRequestsAndCachedTokensDownByServedModel() throws Exception {
    String prompt = "by model " + text(55, 200);
    generate("b-lora-5", prompt);
    generate("b-lora-5", prompt);
    String metrics = get(ROUTER.get().uri(), "/metrics").body();
    assertThat(metrics).contains("kvroute_model_requests_total{model=\"b-lora-5\",outcome=\"success\"")
        .contains("kvroute_model_cached_tokens_total{model=\"b-lora-5\"")
        .contains("kvroute_model_ttft_seconds_count{model=\"b-lora-5\"");
  }

  @Test
  void pagesCachedUnderOneAdapterAreNeverPredictedNorFoundForAnother() throws Exception {
    String prompt = "adapters " + text(101, 600);
    assertThat(generate("b-lora-1", prompt).statusCode()).isEqualTo(200);
    HttpResponse<String> again = generate("b-lora-1", prompt);
    assertThat(cached(again)).isPositive();
    // the router predicts no page of adapter 1 for adapter 2, nor for the base model
    for (String other : List.of("b-lora-2", B)) {
      JsonNode explained = JSON.readTree(post(ROUTER.get().adminUri(), "/admin/explain", chat(other, prompt, 4)).body());
      assertThat(explained.get("candidates")).allSatisfy(c -> assertThat(c.get("matchedTokens").asInt()).isZero());
      assertThat(explained.get("candidates")).hasSize(2);
    }
    JsonNode same = JSON.readTree(post(ROUTER.get().adminUri(), "/admin/explain", chat("b-lora-1", prompt, 4)).body());
    assertThat(same.get("matchedTokens").asInt()).isPositive();
    assertThat(same.get("adapter").asText()).isEqualTo("b-lora-1");
    // and the engines agree: nothing cached for adapter 2 or the base model
    assertThat(cached(generate("b-lora-2", prompt))).isZero();
    assertThat(cached(generate(B, prompt))).isZero();
  }

  @Test
  void anAliasIsRoutedAsItsServedNameWithTheBodysModelRewritten() throws Exception {
    HttpResponse<String> r = generate("chat-a", "alias " + text(7, 50));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    assertThat(r.headers().firstValue("x-kvroute-backend").orElseThrow()).isIn("a0", "a1");
    assertThat(JSON.readTree(r.body()).get("model").asText()).isEqualTo(A);
  }

  @Test
  void aPromptLongerThanEveryCandidatesContextGetsTheEnginesBadRequestBeforeTokenizing() throws Exception {
    double served = engines("vllm:request_success_total");
    String huge = "x".repeat(MAX_MODEL_LEN_A * 128 + 1_000);
    HttpResponse<String> r = post(ROUTER.get().uri(), "/v1/chat/completions", chat(A, huge, 16));
    assertThat(r.statusCode()).isEqualTo(400);
    JsonNode error = JSON.readTree(r.body()).get("error");
    assertThat(error.get("type").asText()).isEqualTo("BadRequestError");
    assertThat(error.get("param").asText()).isEqualTo("input_text");
    assertThat(error.get("message").asText()).isEqualTo("This model's maximum context length is 4096 tokens."
        + " However, you requested 16 output tokens and your prompt contains " + huge.length() + " characters (more"
        + " than " + (4080 * 128) + " characters, which is the upper bound for 4080 input tokens). Please reduce the"
        + " length of the input prompt or the number of requested output tokens.");
    // token ids are counted exactly
    String ids = IntStream.range(0, 5000).mapToObj(i -> Integer.toString(100 + i % 900))
        .reduce((x, y) -> x + "," + y).orElseThrow();
    HttpResponse<String> t = post(ROUTER.get().uri(), "/v1/completions",
        "{\"model\":\"" + A + "\",\"prompt\":[" + ids + "],\"max_tokens\":10}");
    assertThat(t.statusCode()).isEqualTo(400);
    assertThat(JSON.readTree(t.body()).at("/error/message").asText()).startsWith("This model's maximum context length"
        + " is 4096 tokens. However, you requested 10 output tokens and your prompt contains 5000 input tokens, for"
        + " a total of 5010 tokens.");
    // model B's replicas have a longer context: the same text goes through to them
    assertThat(engines("vllm:request_success_total")).isEqualTo(served);
    HttpResponse<String> fits = post(ROUTER.get().uri(), "/v1/completions",
        "{\"model\":\"" + B + "\",\"prompt\":[" + ids + "],\"max_tokens\":10,\"ignore_eos\":true}");
    assertThat(fits.statusCode()).as(fits.body()).isEqualTo(200);
  }

  @Test
  void anAdapterLoadedAtRunTimeServesFromItsReplicaAndIsGoneAfterUnload() throws Exception {
    URI admin = ROUTER.get().adminUri();
    HttpResponse<String> load = post(admin, "/admin/lora/load",
        "{\"lora_name\":\"late-lora\",\"lora_path\":\"/loras/late\",\"backends\":[\"b1\"]}");
    assertThat(load.statusCode()).as(load.body()).isEqualTo(200);
    assertThat(JSON.readTree(load.body()).at("/results/b1/body").asText())
        .isEqualTo("Success: LoRA adapter 'late-lora' added successfully.");
    for (int i = 0; i < 5; i++) {
      HttpResponse<String> r = generate("late-lora", "late " + i + " " + text(300 + i, 40));
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      assertThat(r.headers().firstValue("x-kvroute-backend")).hasValue("b1");
    }
    // no backends named: the unload goes to the replicas that list the adapter (b1), not to every one
    HttpResponse<String> unload = post(admin, "/admin/lora/unload", "{\"lora_name\":\"late-lora\"}");
    assertThat(unload.statusCode()).as(unload.body()).isEqualTo(200);
    assertThat(JSON.readTree(unload.body()).path("results").fieldNames()).toIterable().containsExactly("b1");
    HttpResponse<String> again = post(admin, "/admin/lora/unload", "{\"lora_name\":\"late-lora\"}");
    assertThat(again.statusCode()).as(again.body()).isEqualTo(404);
    HttpResponse<String> gone = generate("late-lora", "late again");
    assertThat(gone.statusCode()).isEqualTo(404);
    assertThat(JSON.readTree(gone.body()).at("/error/message").asText())
        .isEqualTo("The model `late-lora` does not exist.");
    assertThat(engines("kvroute_mock_model_not_found_total")).isZero();
  }

  @Test
  void anAdapterLoadedOnAnEngineDirectlyIsRoutedSoonAfterItsFirst404() throws Exception {
    String engineB1 = ENGINES_B.get().urls().get(1);
    HttpResponse<String> load = post(URI.create(engineB1), "/v1/load_lora_adapter",
        "{\"lora_name\":\"direct-lora\",\"lora_path\":\"/loras/direct\"}");
    assertThat(load.statusCode()).as(load.body()).isEqualTo(200);
    HttpResponse<String> first = generate("direct-lora", "direct " + text(400, 20));
    assertThat(first.statusCode()).as("the router has not read b1's models since").isEqualTo(404);
    // the 404 started a read of every backend's models: well before the 30 s periodic refresh
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200))
        .until(() -> generate("direct-lora", "direct again " + text(401, 20)).statusCode() == 200);
    HttpResponse<String> routed = generate("direct-lora", "direct once more " + text(402, 20));
    assertThat(routed.headers().firstValue("x-kvroute-backend")).hasValue("b1");
    post(URI.create(engineB1), "/v1/unload_lora_adapter", "{\"lora_name\":\"direct-lora\"}");
  }

  @Test
  void aLoadOnAnUnknownBackendIsNotFound() throws Exception {
    HttpResponse<String> r = post(ROUTER.get().adminUri(), "/admin/lora/load",
        "{\"lora_name\":\"x\",\"lora_path\":\"/p\",\"backends\":[\"nope\"]}");
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(JSON.readTree(r.body()).at("/error/param").asText()).isEqualTo("backends");
  }

  @Test
  void anEmptyLoraNameOrBackendsListWasSentOnOrCalledNotFound() throws Exception {
    URI admin = ROUTER.get().adminUri();
    HttpResponse<String> noName = post(admin, "/admin/lora/load", "{\"lora_name\":\"\",\"lora_path\":\"/p\"}");
    assertThat(noName.statusCode()).isEqualTo(400);
    assertThat(JSON.readTree(noName.body()).at("/error/param").asText()).isEqualTo("lora_name");
    HttpResponse<String> noPath = post(admin, "/admin/lora/load", "{\"lora_name\":\"x\",\"lora_path\":\" \"}");
    assertThat(noPath.statusCode()).isEqualTo(400);
    assertThat(JSON.readTree(noPath.body()).at("/error/param").asText()).isEqualTo("lora_path");
    HttpResponse<String> noBackends = post(admin, "/admin/lora/unload", "{\"lora_name\":\"x\",\"backends\":[]}");
    assertThat(noBackends.statusCode()).isEqualTo(400);
    assertThat(JSON.readTree(noBackends.body()).at("/error/param").asText()).isEqualTo("backends");
  }
}
