package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.BackendId;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.engine.server.MockEngineServer;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Engine-reported load: requests an engine runs that this router did not send (another router
 * replica, a client calling the engine directly) are scraped from the engine's {@code /metrics} and
 * steer routing away from it; and the same scrape notices an engine restart too quick for the health
 * probes.
 */
@ExtendWith(NettyLeakExtension.class)
final class EngineLoadIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int FOREIGN = 8;

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  /** Real time (scale 1): a 1500-token reply at 100 tokens/s decodes for 15 s. */
  private static MockEngineOptions engine(int port) {
    return EngineRestartIT.engine(port, 1);
  }

  private static KvrouteServer router(Duration engineLoadInterval, Duration healthInterval, MockEngineServer... engines) {
    return router(engineLoadInterval, healthInterval, true, engines);
  }

  private static KvrouteServer router(Duration engineLoadInterval, Duration healthInterval, boolean foreignLoad,
      MockEngineServer... engines) {
    List<URI> urls = new ArrayList<>();
    for (MockEngineServer e : engines) {
      urls.add(URI.create(e.url()));
    }
    ProxyConfig base = ProxyConfig.defaults();
    // admission off: the foreign requests fill engine a's KV, which admission (rightly) reads as
    // saturated; these tests are about what the policy counts
    return KvrouteServer.start(base.withPort(0).withAdminPort(0)
        .withAdmission(base.admission().withEnabled(false))
        .withPolicy(base.policy().withName("cache-aware").withForeignLoad(foreignLoad))
        .withHealthCheck(new HealthCheckConfig(true, "/health", healthInterval, Duration.ofSeconds(1), 2, 1,
            engineLoadInterval))
        .withBackendUrls(urls));
  }

  private static String chat(String content, int maxTokens) {
    return "{\"model\":\"" + MockEngineOptions.DEFAULT_MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\""
        + content + "\"}],\"max_tokens\":" + maxTokens + ",\"ignore_eos\":true}";
  }

  private HttpResponse<String> post(URI base, String path, String body) throws Exception {
    return http.send(HttpRequest.newBuilder(base.resolve(path)).timeout(Duration.ofSeconds(20))
        .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private JsonNode adminBackend(KvrouteServer router, String name) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(router.adminUri().resolve("/admin/backends"))
        .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.ofString());
    for (JsonNode b : JSON.readTree(r.body()).path("backends")) {
      if (name.equals(b.path("name").asText())) {
        return b;
      }
    }
    throw new AssertionError("no backend " + name + " in " + r.body());
  }

  /** Long requests sent straight to engines, bypassing the router; closing aborts them. */
  private static final class DirectLoad implements AutoCloseable {
    private final List<RawHttp> clients = new ArrayList<>();

    /** Sends {@code n} requests of 1500 tokens to {@code engine}. */
    void send(MockEngineServer engine, int n) throws Exception {
      String body = chat("a batch job that talks to the engine directly", 1500);
      for (int i = 0; i < n; i++) {
        RawHttp c = new RawHttp(URI.create(engine.url()).getPort());
        clients.add(c);
        c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + "Content-Length: " + body.length() + "\r\n\r\n" + body);
      }
    }

    @Override
    public void close() throws Exception {
      for (RawHttp c : clients) {
        c.close();
      }
    }
  }

  /** Sends {@code n} fresh prompts (cached nowhere) through {@code router}; counts them by backend. */
  private Map<String, Integer> freshPrompts(KvrouteServer router, int n) throws Exception {
    Map<String, Integer> served = new HashMap<>();
    for (int i = 0; i < n; i++) {
      HttpResponse<String> r = post(router.uri(), "/v1/chat/completions", chat("question number " + i, 2));
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      served.merge(r.headers().firstValue("x-kvroute-backend").orElseThrow(), 1, Integer::sum);
    }
    return served;
  }

  @Test
  void loadOtherClientsPutOnAnEngineSteersRoutingAwayFromIt() throws Exception {
    try (MockEngineServer a = MockEngineServer.start(engine(0));
        MockEngineServer b = MockEngineServer.start(engine(0));
        KvrouteServer router = router(Duration.ofMillis(100), Duration.ofSeconds(5), a, b);
        DirectLoad direct = new DirectLoad()) {
      BackendId busy = router.backends().get(0);
      BackendId free = router.backends().get(1);
      direct.send(a, FOREIGN);
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(busy).foreignRequests() == FOREIGN);
      assertThat(router.scrapeMetrics())
          .contains("kvroute_backend_foreign_requests{backend=\"" + busy.name() + "\"} " + FOREIGN + ".0")
          .contains("kvroute_backend_foreign_requests{backend=\"" + free.name() + "\"} 0.0");
      JsonNode load = adminBackend(router, busy.name()).path("load");
      assertThat(load.path("foreignRequests").asInt()).isEqualTo(FOREIGN);
      assertThat(load.path("engineKvUsage").asDouble()).isGreaterThan(0);

      // fresh prompts (no cached prefix anywhere): each goes to the less loaded engine, counting the foreign load
      assertThat(freshPrompts(router, 8)).containsExactly(Map.entry(free.name(), 8));

      // the direct clients go away: the engine's next report shows no foreign load
      direct.close();
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(busy).foreignRequests() == 0);
    }
  }

  @Test
  void byDefaultTheForeignLoadIsShownButNotCounted() throws Exception {
    try (MockEngineServer a = MockEngineServer.start(engine(0));
        MockEngineServer b = MockEngineServer.start(engine(0));
        KvrouteServer router = router(Duration.ofMillis(100), Duration.ofSeconds(5), false, a, b);
        DirectLoad direct = new DirectLoad()) {
      assertThat(ProxyConfig.defaults().policy().foreignLoad()).isFalse();
      BackendId busy = router.backends().get(0);
      direct.send(a, FOREIGN);
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(busy).foreignRequests() == FOREIGN);
      // not counted, both engines look idle to the router: fresh prompts go to either (ties are
      // drawn at random; all 8 on the other engine has odds of 1 in 256)
      assertThat(freshPrompts(router, 8)).as("fresh prompts reach the busy engine too").containsKey(busy.name());
    }
  }

  @Test
  void withoutTheScrapeTheForeignLoadIsInvisible() throws Exception {
    try (MockEngineServer a = MockEngineServer.start(engine(0));
        KvrouteServer router = router(Duration.ZERO, Duration.ofMillis(100), a);
        DirectLoad direct = new DirectLoad()) {
      BackendId id = router.backends().get(0);
      direct.send(a, 2);
      await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
          .until(() -> router.core().loads().load(id).foreignRequests() == 0);
      assertThat(router.core().loads().load(id).engineKvUsage()).isEqualTo(-1);
    }
  }

  @Test
  void anEngineRestartQuickerThanTheHealthProbesIsNoticed() throws Exception {
    MockEngineServer engine = MockEngineServer.start(engine(0));
    int port = URI.create(engine.url()).getPort();
    // probes every 5 s: the outage below is over long before a probe could fail
    try (KvrouteServer router = router(Duration.ofMillis(100), Duration.ofSeconds(5), engine)) {
      BackendId id = router.backends().get(0);
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(id).engineKvUsage() >= 0);
      String prompt = "a fairly long prompt ".repeat(40);
      assertThat(post(router.uri(), "/v1/chat/completions", chat(prompt, 2)).statusCode()).isEqualTo(200);
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(id).inFlightRequests() == 0);
      assertThat(router.core().index().sizeTokens(id)).isGreaterThan(100);

      engine.close();
      engine = MockEngineServer.start(engine(port));
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().index().sizeTokens(id) == 0);
    } finally {
      engine.close();
    }
  }

  /** A cache-aware router in front of {@code backend}, scraping its load every 100 ms (probes: 5 s). */
  private static KvrouteServer scrapingRouter(FakeBackend backend) {
    return KvrouteServer.start(ProxyFailureIT.base("cache-aware", List.of(backend.uri()))
        .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1,
            Duration.ofMillis(100))));
  }

  private static String metrics(double startSeconds, double kvUsage) {
    return "process_start_time_seconds " + startSeconds + "\nvllm:num_requests_running 0.0\n"
        + "vllm:num_requests_waiting 0.0\nvllm:kv_cache_usage_perc " + kvUsage + "\n";
  }

  /** Sets what the backend's /metrics answers and waits until the router has read it. */
  private static void scraped(FakeBackend backend, KvrouteServer router, BackendId id, double start, double kv) {
    backend.metricsText.set(metrics(start, kv));
    await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(id).engineKvUsage() == kv);
  }

  @Test
  void onlyALaterStartTimeIsARestartSoSeveralEnginesBehindOneUrlDoNotWipeTheView() throws Exception {
    try (FakeBackend backend = new FakeBackend("b", MockEngineOptions.DEFAULT_MODEL); // serves the model chat() names
        KvrouteServer router = scrapingRouter(backend)) {
      BackendId id = router.backends().get(0);
      String prompt = chat("a fairly long prompt ".repeat(40), 2);
      scraped(backend, router, id, 1000.0, 0.1);
      assertThat(post(router.uri(), "/v1/chat/completions", prompt).statusCode()).isEqualTo(200);
      assertThat(router.core().index().sizeTokens(id)).isGreaterThan(100);

      scraped(backend, router, id, 2000.0, 0.2); // restarted
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().index().sizeTokens(id) == 0);
      assertThat(post(router.uri(), "/v1/chat/completions", prompt).statusCode()).isEqualTo(200);
      long held = router.core().index().sizeTokens(id);
      assertThat(held).isGreaterThan(100);

      // another engine behind the same URL, then the first again: neither is a restart
      scraped(backend, router, id, 1000.0, 0.3);
      scraped(backend, router, id, 2000.0, 0.4);
      scraped(backend, router, id, 1500.0, 0.5);
      assertThat(router.core().index().sizeTokens(id)).isEqualTo(held);
    }
  }

  @Test
  void aReportIsDroppedOnlyAfterSeveralScrapesFail() throws Exception {
    try (FakeBackend backend = new FakeBackend("b", MockEngineOptions.DEFAULT_MODEL); // serves the model chat() names
        KvrouteServer router = scrapingRouter(backend)) {
      BackendId id = router.backends().get(0);
      backend.metricsText.set("vllm:num_requests_running 5.0\nvllm:num_requests_waiting 2.0\n");
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(id).foreignRequests() == 7);
      // the gauges vanish (an engine that cannot say): a missed scrape or two keeps the report, then it goes
      backend.metricsText.set("# nothing\n");
      long since = System.nanoTime();
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(id).foreignRequests() == 0);
      assertThat(Duration.ofNanos(System.nanoTime() - since))
          .as("kept through %d failed scrapes 100 ms apart", EngineLoadScraper.FAILED_SCRAPES_KEPT - 1)
          .isGreaterThanOrEqualTo(Duration.ofMillis(150));
    }
  }
}
