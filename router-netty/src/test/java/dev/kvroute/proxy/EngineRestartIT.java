package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

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
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A backend whose engine restarts comes back with an empty prefix cache: once it is healthy again
 * the router forgets its index view ({@code process_start_time_seconds} changed), while a backend
 * that only failed its probes keeps its view.
 */
@ExtendWith(NettyLeakExtension.class)
final class EngineRestartIT {
  private static final String CHAT = "{\"model\":\"" + MockEngineOptions.DEFAULT_MODEL
      + "\",\"messages\":[{\"role\":\"user\",\"content\":\"" + "a fairly long prompt ".repeat(40)
      + "\"}],\"max_tokens\":2}";

  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  private static MockEngineOptions engine(int port) {
    return engine(port, 10);
  }

  /** A mock engine on loopback {@code port} (0 = any) with ProxyMockEngineIT's engine model. */
  static MockEngineOptions engine(int port, double timeScale) {
    return MockEngineOptions.builder()
        .host("127.0.0.1")
        .port(port)
        .engine(ProxyMockEngineIT.options().engine())
        .timeScale(timeScale)
        .build();
  }

  private static KvrouteServer router(MockEngineServer engine) {
    return KvrouteServer.start(ProxyConfig.defaults().withPort(0).withAdminPort(-1).withPolicy("cache-aware")
        .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(100), Duration.ofMillis(500), 1, 1, Duration.ZERO))
        .withBackendUrls(List.of(URI.create(engine.url()))));
  }

  private String post(URI uri, String path, String body) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri.resolve(path)).timeout(Duration.ofSeconds(20))
        .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return r.body();
  }

  private static boolean healthy(KvrouteServer router, BackendId id, boolean healthy) {
    return router.scrapeMetrics().contains("kvroute_backend_healthy{backend=\"" + id.name() + "\"} " + (healthy ? "1.0" : "0.0"));
  }

  /** Waits until the router has read the engine's {@code /metrics} (capacity and start time). */
  private static void discovered(KvrouteServer router, BackendId id) {
    await().atMost(Duration.ofSeconds(5)).until(() -> router.scrapeMetrics()
        .contains("kvroute_backend_capacity_tokens{backend=\"" + id.name() + "\"} 200000"));
  }

  /** Routes one chat request and waits until it has ended; returns the tokens in the backend's view. */
  private static long routedOnce(EngineRestartIT t, KvrouteServer router, BackendId id) throws Exception {
    t.post(router.uri(), "/v1/chat/completions", CHAT);
    await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(id).inFlightRequests() == 0);
    return router.core().index().sizeTokens(id);
  }

  @Test
  void aRestartedEngineLosesItsViewOnceItIsHealthyAgain() throws Exception {
    MockEngineServer engine = MockEngineServer.start(engine(0));
    int port = URI.create(engine.url()).getPort();
    try (KvrouteServer router = router(engine)) {
      BackendId id = router.backends().get(0);
      discovered(router, id);
      assertThat(routedOnce(this, router, id)).isGreaterThan(100);

      engine.close();
      await().atMost(Duration.ofSeconds(5)).until(() -> healthy(router, id, false));
      assertThat(router.core().index().sizeTokens(id)).as("an outage alone keeps the view").isGreaterThan(100);
      engine = MockEngineServer.start(engine(port));
      await().atMost(Duration.ofSeconds(5)).until(() -> healthy(router, id, true));
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().index().sizeTokens(id) == 0);
    } finally {
      engine.close();
    }
  }

  @Test
  void failedProbesWithoutARestartKeepTheView() throws Exception {
    try (MockEngineServer engine = MockEngineServer.start(engine(0));
        KvrouteServer router = router(engine)) {
      BackendId id = router.backends().get(0);
      discovered(router, id);
      outageWithoutRestartKeepsTheView(router, id, engine);
    }
  }

  @Test
  void aConfiguredCapacityStillHasTheStartTimeRead() throws Exception {
    try (MockEngineServer engine = MockEngineServer.start(engine(0));
        KvrouteServer router = KvrouteServer.start(ProxyConfig.defaults().withPort(0).withAdminPort(-1)
            .withPolicy("cache-aware")
            .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(100), Duration.ofMillis(500), 1, 1, Duration.ZERO))
            .withBackends(List.of(new dev.kvroute.proxy.config.BackendConfig(URI.create(engine.url()), null, 100_000))))) {
      outageWithoutRestartKeepsTheView(router, router.backends().get(0), engine);
    }
  }

  private void outageWithoutRestartKeepsTheView(KvrouteServer router, BackendId id, MockEngineServer engine)
      throws Exception {
    long held = routedOnce(this, router, id);
    assertThat(held).isGreaterThan(100);

    post(URI.create(engine.url()), "/mock/faults", "{\"health\":\"fail\"}");
    await().atMost(Duration.ofSeconds(5)).until(() -> healthy(router, id, false));
    post(URI.create(engine.url()), "/mock/faults", "{\"health\":\"ok\"}");
    await().atMost(Duration.ofSeconds(5)).until(() -> healthy(router, id, true));
    // the restart check reads /metrics after the recovery: the view must stay through it
    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
        .until(() -> router.core().index().sizeTokens(id) == held);
  }
}
