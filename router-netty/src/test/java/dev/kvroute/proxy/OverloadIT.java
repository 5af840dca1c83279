package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.proxy.config.CircuitBreakerConfig;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.TimeoutConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Overload as clients see it: never a 200 without an answer, busy engines stay in rotation, the
 * router's queue answers 429/503 with {@code Retry-After} and a JSON body.
 */
@ExtendWith(NettyLeakExtension.class)
final class OverloadIT {
  static final String STREAM = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";

  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  static ProxyConfig base(List<URI> backends, Duration firstByte, Duration idle) {
    return ProxyFailureIT.base("round-robin", backends)
        .withTimeouts(new TimeoutConfig(Duration.ofSeconds(3), firstByte, idle, Duration.ofSeconds(60)));
  }

  HttpResponse<String> post(KvrouteServer router, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(router.uri().resolve("/v1/chat/completions"))
        .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aHeadWithNoBodyBeforeTheFirstByteTimeoutIsAJson504NotAnEmpty200() throws Exception {
    try (FakeBackend engine = new FakeBackend("queued");
        KvrouteServer router = KvrouteServer.start(base(List.of(engine.uri()), Duration.ofMillis(500), Duration.ofSeconds(5)))) {
      HttpResponse<String> r = post(router, STREAM, "x-fake", "head-delay-ms=5000");
      assertThat(r.statusCode()).isEqualTo(504);
      assertThat(r.headers().firstValue("content-type")).hasValue("application/json");
      assertThat(r.body()).contains("\"error\"").contains("GatewayTimeoutError").contains("sent no response within 500 ms");
      HttpResponse<String> next = post(router, STREAM);
      assertThat(next.statusCode()).isEqualTo(200);
      assertThat(next.body()).endsWith("data: [DONE]\n\n");
    }
  }

  @Test
  void aHeadHeldUntilTheFirstByteIsRetriedOnAnotherBackend() throws Exception {
    try (FakeBackend slow = new FakeBackend("slow");
        FakeBackend fast = new FakeBackend("fast");
        KvrouteServer router = KvrouteServer.start(base(List.of(slow.uri(), fast.uri()), Duration.ofMillis(500), Duration.ofSeconds(5)))) {
      slow.forcedDirectives.set("head-delay-ms=5000");
      for (int i = 0; i < 2; i++) {
        HttpResponse<String> r = post(router, STREAM);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-kvroute-backend")).hasValue(ProxyFailureIT.id(fast).name());
        assertThat(r.body()).contains("wörd0").endsWith("data: [DONE]\n\n");
      }
    }
  }

  @Test
  void aStreamThatStallsMidwayEndsWithAnSseErrorEventAndDone() throws Exception {
    try (FakeBackend engine = new FakeBackend("stalls");
        KvrouteServer router = KvrouteServer.start(base(List.of(engine.uri()), Duration.ofSeconds(5), Duration.ofMillis(500)))) {
      HttpResponse<String> r = post(router, STREAM, "x-fake", "events=3;stall-after=1");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).contains("wörd0").doesNotContain("wörd1");
      assertThat(r.body()).contains("\ndata: {\"error\":{\"message\":\"backend ")
          .contains("sent nothing for 500 ms").contains("\"code\":504")
          .endsWith("}}\n\ndata: [DONE]\n\n");
      assertThat(router.scrapeMetrics()).contains("kvroute_stream_error_events_total 1.0");
      HttpResponse<String> next = post(router, STREAM);
      assertThat(next.statusCode()).isEqualTo(200);
      assertThat(next.body()).endsWith("data: [DONE]\n\n");
    }
  }

  @Test
  void firstByteTimeoutsOnABusyEngineKeepItsCircuitClosedAndTheRouterReady() throws Exception {
    try (FakeBackend engine = new FakeBackend("busy")) {
      engine.metricsText.set("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"100\"} 1.0\n"
          + "vllm:num_requests_running 1.0\nvllm:num_requests_waiting 4.0\nvllm:kv_cache_usage_perc 0.5\n");
      ProxyConfig config = base(List.of(engine.uri()), Duration.ofMillis(300), Duration.ofSeconds(5))
          .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(100), Duration.ofSeconds(2), 2, 1,
              Duration.ofMillis(100)))
          .withCircuitBreaker(new CircuitBreakerConfig(true, 2, Duration.ofSeconds(30), 1));
      try (KvrouteServer router = KvrouteServer.start(config)) {
        Backend b = router.registry().all().get(0);
        await().atMost(Duration.ofSeconds(10)).until(b::busy);
        for (int i = 0; i < 3; i++) {
          assertThat(post(router, STREAM, "x-fake", "head-delay-ms=3000").statusCode()).isEqualTo(504);
        }
        String m = router.scrapeMetrics();
        assertThat(m).contains("kind=\"first_byte_timeout_busy\"} 3.0");
        assertThat(m).contains("kvroute_circuit_state{backend=\"" + ProxyFailureIT.id(engine).name() + "\"} 0.0");
        assertThat(http.send(HttpRequest.newBuilder(router.uri().resolve("/ready")).build(),
            HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
        assertThat(post(router, STREAM).statusCode()).isEqualTo(200);
      }
    }
  }

  @Test
  void noMoreThanTheMaxEjectionShareOfBackendsIsEjected() throws Exception {
    try (FakeBackend a = new FakeBackend("a");
        FakeBackend b = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(base(List.of(a.uri(), b.uri()), Duration.ofSeconds(5), Duration.ofSeconds(5))
            .withCircuitBreaker(new CircuitBreakerConfig(true, 1, Duration.ofSeconds(30), 1, 50)))) {
      a.forcedStatus.set(500);
      b.forcedStatus.set(500);
      for (int i = 0; i < 6; i++) {
        assertThat(post(router, STREAM).statusCode()).isEqualTo(500);
      }
      String m = router.scrapeMetrics();
      assertThat(m).containsOnlyOnce("} 1.0\nkvroute_circuit_state").as("one of two circuits open");
      assertThat(router.registry().all().stream().filter(x -> x.breaker().state() == CircuitBreaker.State.OPEN).count())
          .isEqualTo(1);
      a.forcedStatus.set(0);
      b.forcedStatus.set(0);
      assertThat(post(router, STREAM).statusCode()).isEqualTo(200);
    }
  }
}
