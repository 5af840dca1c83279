package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.RoutingConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code --tokenizer engine} through real sockets: a router asking the mock engines' {@code /tokenize}
 * routes on the engines' own tokens, so its predicted cached tokens equal what the engines report for
 * every request ({@code kvroute_prefix_prediction_error_tokens} stays at zero) with the engines on
 * {@code o200k_base} and on the real Qwen3 tokenizer and chat template; the next turns of a
 * conversation reuse earlier answers without a call; and an engine that does not answer in time makes
 * the router fall back to {@code o200k_base}, counted, while every request still succeeds.
 */
@ExtendWith(NettyLeakExtension.class)
final class EngineTokenizerIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern ERROR_SUM = Pattern.compile(
      "(?m)^kvroute_prefix_prediction_error_tokens_sum\\{[^}]*\\} (\\S+)$");
  private static final Pattern ERROR_COUNT = Pattern.compile(
      "(?m)^kvroute_prefix_prediction_error_tokens_count\\{[^}]*\\} (\\S+)$");
  private static final Pattern CACHED_SUM = Pattern.compile("(?m)^kvroute_engine_cached_tokens_sum\\{[^}]*\\} (\\S+)$");
  private static final String[] WORDS = ("the router keeps a prefix index of every engine cache and sends each "
      + "turn where its history already lives 前缀 缓存 命中 😀 🚀 café naïve").split(" ");

  private record Run(int requests, int ok, String metrics) {
    double sum(Pattern p) {
      double total = 0;
      for (Matcher m = p.matcher(metrics); m.find(); ) {
        total += Double.parseDouble(m.group(1));
      }
      return total;
    }

    double counter(String name, String tag) {
      Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name)
          + (tag.isEmpty() ? "" : "\\{" + Pattern.quote(tag) + "[^}]*\\}") + " (\\S+)$").matcher(metrics);
      return m.find() ? Double.parseDouble(m.group(1)) : -1;
    }
  }

  @Test
  void theEnginesO200kTokensPredictExactly() throws Exception {
    Run run = run("o200k_base", Duration.ofSeconds(10), 0);
    assertExact(run);
  }

  @Test
  void aPerModelEngineEntryAsksTheEngineForThatModel() throws Exception {
    Run run = run("o200k_base", new RoutingConfig("x-session-id", "user", "o200k_base", 16, 524_288,
        Map.of(MockEngineOptions.DEFAULT_MODEL, "engine"), Duration.ofSeconds(10), 0));
    assertExact(run);
  }

  @Test
  void aLargeBodyIsTokenizedByTheEngineToo() throws Exception {
    String text = "large body ".repeat(ProxyHandler.OFFLOAD_BODY_BYTES / 11 + 1);
    ObjectNode body = JSON.createObjectNode().put("model", MockEngineOptions.DEFAULT_MODEL).put("max_tokens", 4);
    body.putArray("messages").addObject().put("role", "user").put("content", text);
    String json = JSON.writeValueAsString(body);
    Run run = run("o200k_base", new RoutingConfig("x-session-id", "user", "engine", 16, 524_288, Map.of(),
        Duration.ofSeconds(10), 0), 200_000, (http, base) -> {
          int ok = 0;
          for (int i = 0; i < 2; i++) {
            HttpResponse<String> r = chat(http, base, json);
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            ok++;
          }
          return new int[] {2, ok};
        });
    assertThat(run.ok()).isEqualTo(2);
    assertThat(run.counter("kvroute_tokenizer_engine_lookups_total", "result=\"call\"")).isEqualTo(1);
    assertThat(run.counter("kvroute_tokenizer_engine_lookups_total", "result=\"exact\"")).isEqualTo(1);
    assertThat(run.sum(ERROR_SUM)).isZero();
    assertThat(run.sum(CACHED_SUM)).as("the second is a hit of the first").isGreaterThan(40_000);
  }

  @Test
  void theEnginesQwen3TokensPredictExactly() throws Exception {
    Run run = run("hf:" + HfTokenizerPredictionIT.qwen3(), Duration.ofSeconds(10), 0);
    assertExact(run);
  }

  private static void assertExact(Run run) {
    assertThat(run.ok()).isEqualTo(run.requests());
    assertThat(run.counter("kvroute_tokenizer_engine_lookups_total", "result=\"call\"")).isEqualTo(run.requests());
    assertThat(run.sum(ERROR_COUNT)).as("requests with a usage report").isEqualTo(run.requests());
    assertThat(run.sum(ERROR_SUM)).as("sum of |predicted - engine-reported cached tokens|").isZero();
    assertThat(run.sum(CACHED_SUM)).as("engine-reported cached tokens").isGreaterThan(10_000);
    assertThat(run.metrics()).doesNotContainPattern("kvroute_tokenizer_fallbacks_total\\{[^}]*\\} [1-9]");
  }

  @Test
  void nextTurnsReuseEarlierAnswers() throws Exception {
    Run run = run("o200k_base", Duration.ofSeconds(10), 0.5);
    assertThat(run.ok()).isEqualTo(run.requests());
    double calls = run.counter("kvroute_tokenizer_engine_lookups_total", "result=\"call\"");
    double reused = run.counter("kvroute_tokenizer_engine_lookups_total", "result=\"prefix\"");
    assertThat(reused).isPositive();
    assertThat(calls + reused).isEqualTo(run.requests());
    assertThat(run.counter("kvroute_tokenizer_engine_reuse_corrections_total", "")).isZero();
    assertThat(run.sum(CACHED_SUM)).isGreaterThan(10_000);
  }

  @Test
  void anEngineTooSlowToTokenizeFallsBackAndRequestsStillSucceed() throws Exception {
    Run run = run("o200k_base", Duration.ofNanos(1), 0);
    assertThat(run.ok()).isEqualTo(run.requests());
    assertThat(run.counter("kvroute_tokenizer_fallbacks_total", "reason=\"timeout\"")).isPositive();
    assertThat(run.sum(CACHED_SUM)).as("routed on the router's own tokens, still by prefix").isGreaterThan(5_000);
  }

  @Test
  void aClientThatLeavesWhileTheEngineTokenizesIsCountedCancelledByModelToo() throws Exception {
    try (FakeBackend engine = new FakeBackend("e");
        KvrouteServer router = KvrouteServer.start(ProxyConfig.defaults().withPort(0).withAdminPort(-1)
            .withPolicy("cache-aware")
            .withRouting(new RoutingConfig("x-session-id", "user", "engine", 16, 524_288, Map.of(), Duration.ofSeconds(2), 0))
            .withBackendUrls(java.util.List.of(engine.uri())));
        RawHttp client = new RawHttp(router.port())) {
      engine.forcedDirectives.set("stall"); // /tokenize never answers
      String body = "{\"model\":\"" + FakeBackend.DEFAULT_MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
      client.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: "
          + body.length() + "\r\n\r\n" + body);
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5))
          .until(() -> engine.received.stream().anyMatch(r -> r.uri().equals("/tokenize")));
      client.close();
      // counted when the engine's answer would have come (here its 2 s timeout)
      Pattern cancelled = Pattern.compile("(?m)^kvroute_requests_total\\{backend=\"none\",endpoint=\"[a-z_]+\","
          + "outcome=\"cancelled\"[^}]*\\} 1.0$");
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
          .until(() -> cancelled.matcher(router.scrapeMetrics()).find());
      assertThat(router.scrapeMetrics())
          .contains("kvroute_model_requests_total{model=\"" + FakeBackend.DEFAULT_MODEL + "\",outcome=\"cancelled\"} 1.0");
    }
  }

  private Run run(String engineTokenizer, Duration timeout, double reuse) throws Exception {
    return run(engineTokenizer, new RoutingConfig("x-session-id", "user", "engine", 16, 524_288, Map.of(), timeout, reuse));
  }

  /** Sends requests through the router at {@code base}; returns {requests, ok}. */
  private interface Workload {
    int[] send(HttpClient http, String base) throws Exception;
  }

  private Run run(String engineTokenizer, RoutingConfig routing) throws Exception {
    return run(engineTokenizer, routing, 32_768, EngineTokenizerIT::sessions);
  }

  private Run run(String engineTokenizer, RoutingConfig routing, int maxModelLen, Workload workload) throws Exception {
    MockEngineOptions options = MockEngineOptions.builder()
        .host("127.0.0.1").port(0)
        .engine(EngineConfig.builder().cost(CostModel.linear(50_000, 0.005, 1_000)).kvCapacityTokens(400_000)
            .maxModelLen(maxModelLen).build())
        .timeScale(20).enablePromptTokensDetails(true).seed(3).meanOutputTokens(24)
        .tokenizer(engineTokenizer)
        .build();
    try (MockEngineFleet engines = MockEngineFleet.start(options, 2)) {
      ProxyConfig config = ProxyConfig.defaults().withPort(0).withAdminPort(0).withPolicy("cache-aware")
          .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(500), Duration.ofSeconds(1), 2, 1,
              Duration.ZERO))
          .withRouting(routing)
          .withBackendUrls(engines.urls().stream().map(URI::create).toList());
      KvrouteServer router = KvrouteServer.start(config, KvrouteServer.createCore(config));
      try {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        int[] sent = workload.send(http, "http://127.0.0.1:" + router.port());
        String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + router.port() + "/metrics"))
            .build(), HttpResponse.BodyHandlers.ofString()).body();
        return new Run(sent[0], sent[1], metrics);
      } finally {
        router.close();
      }
    }
  }

  /** Six seed-like sessions of four turns: a 1,500-word system prompt, then the whole history each turn. */
  private static int[] sessions(HttpClient http, String base) throws Exception {
    SplittableRandom random = new SplittableRandom(11);
    int requests = 0;
    int ok = 0;
    for (int session = 0; session < 6; session++) {
      ArrayNode messages = JSON.createArrayNode();
      messages.addObject().put("role", "system").put("content", "Session " + session + ": " + words(random, 1500));
      for (int turn = 0; turn < 4; turn++) {
        messages.addObject().put("role", "user").put("content", words(random, 60));
        ObjectNode body = JSON.createObjectNode().put("model", MockEngineOptions.DEFAULT_MODEL)
            .put("max_tokens", 24).put("user", "s" + session);
        body.set("messages", messages);
        HttpResponse<String> r = chat(http, base, JSON.writeValueAsString(body));
        requests++;
        if (r.statusCode() == 200) {
          ok++;
        }
        // a scripted reply, not the engine's: the router indexes prompts, not generated blocks
        messages.addObject().put("role", "assistant").put("content", words(random, 40));
      }
    }
    return new int[] {requests, ok};
  }

  private static HttpResponse<String> chat(HttpClient http, String base, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(URI.create(base + "/v1/chat/completions"))
        .timeout(Duration.ofSeconds(60)).header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String words(SplittableRandom random, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      if (i > 0) {
        sb.append(' ');
      }
      sb.append(WORDS[random.nextInt(WORDS.length)]);
    }
    return sb.toString();
  }
}
