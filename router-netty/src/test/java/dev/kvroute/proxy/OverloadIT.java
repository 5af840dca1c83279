package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.proxy.config.AdmissionConfig;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
    // probes tolerant of a busy test machine: a slow answer is not an outage here
    return ProxyFailureIT.base("round-robin", backends)
        .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(200), Duration.ofSeconds(5), 3, 1, Duration.ZERO))
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
          + "vllm:num_requests_running 1.0\nvllm:num_requests_waiting 1.0\nvllm:kv_cache_usage_perc 0.5\n");
      ProxyConfig config = base(List.of(engine.uri()), Duration.ofMillis(300), Duration.ofSeconds(5))
          .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(100), Duration.ofSeconds(5), 3, 1,
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
        // the engine's queue drains: the next request is served (while it reported 2 foreign requests
        // against a derived limit of 1 + 4, 3 slots were free)
        engine.metricsText.set("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"100\"} 1.0\n"
            + "vllm:num_requests_running 0.0\nvllm:num_requests_waiting 0.0\nvllm:kv_cache_usage_perc 0.0\n");
        await().atMost(Duration.ofSeconds(10)).until(() -> !b.busy());
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

  static String stream(String content) {
    return "{\"messages\":[{\"role\":\"user\",\"content\":\"" + content + "\"}],\"stream\":true}";
  }

  static ProxyConfig limited(List<URI> backends, int perBackend, int queueLength, Duration deadline) {
    return base(backends, Duration.ofSeconds(20), Duration.ofSeconds(20)).withAdmission(AdmissionConfig.defaults()
        .withMaxConcurrencyPerBackend(perBackend).withQueue(queueLength, 1 << 20, deadline));
  }

  CompletableFuture<HttpResponse<String>> postAsync(KvrouteServer router, String body, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(router.uri().resolve("/v1/chat/completions"))
        .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static double metric(KvrouteServer router, String line) {
    return router.scrapeMetrics().lines().filter(l -> l.startsWith(line + " ")).findFirst()
        .map(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).orElse(0.0);
  }

  static final String QUEUED = "kvroute_admission_requests_total{result=\"queued\"}";

  @Test
  void requestsBeyondTheBackendsLimitWaitInTheRouterAndAllComplete() throws Exception {
    try (FakeBackend engine = new FakeBackend("one");
        KvrouteServer router = KvrouteServer.start(limited(List.of(engine.uri()), 1, 10, Duration.ofSeconds(20)))) {
      engine.forcedDirectives.set("events=3;interval-ms=100");
      List<CompletableFuture<HttpResponse<String>>> all = new java.util.ArrayList<>();
      for (int i = 0; i < 4; i++) {
        all.add(postAsync(router, stream("r" + i)));
      }
      for (CompletableFuture<HttpResponse<String>> f : all) {
        HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.body()).contains("wörd2").endsWith("data: [DONE]\n\n").doesNotContain("\"error\"");
      }
      assertThat(engine.received).hasSize(4);
      assertThat(metric(router, QUEUED)).isGreaterThanOrEqualTo(1.0);
      assertThat(router.scrapeMetrics()).contains("kvroute_admission_queue_wait_seconds_count");
      await().atMost(Duration.ofSeconds(5)).until(() -> metric(router, "kvroute_admission_queue_length{priority=\"normal\"}") == 0);
    }
  }

  @Test
  void aFullQueueIs429WithRetryAfterAndOpenAisRateLimitBodyAtOnce() throws Exception {
    try (FakeBackend engine = new FakeBackend("one");
        KvrouteServer router = KvrouteServer.start(limited(List.of(engine.uri()), 1, 1, Duration.ofSeconds(20)))) {
      CompletableFuture<HttpResponse<String>> running = postAsync(router, stream("running"), "x-fake", "events=2;interval-ms=1500");
      await().atMost(Duration.ofSeconds(10)).until(() -> engine.received.size() == 1);
      CompletableFuture<HttpResponse<String>> queued = postAsync(router, stream("queued"));
      await().atMost(Duration.ofSeconds(10)).until(() -> metric(router, QUEUED) == 1.0);
      long t0 = System.nanoTime();
      HttpResponse<String> refused = post(router, stream("refused"));
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(1));
      assertThat(refused.statusCode()).isEqualTo(429);
      assertThat(refused.headers().firstValue("retry-after")).hasValueSatisfying(v -> assertThat(Long.parseLong(v)).isPositive());
      assertThat(refused.headers().firstValue("content-type")).hasValue("application/json");
      assertThat(refused.body()).contains("\"type\":\"requests\"").contains("\"code\":\"rate_limit_exceeded\"");
      assertThat(http.send(HttpRequest.newBuilder(router.uri().resolve("/ready")).build(),
          HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
      assertThat(running.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      assertThat(queued.get(20, TimeUnit.SECONDS).body()).endsWith("data: [DONE]\n\n");
      assertThat(metric(router, "kvroute_admission_requests_total{result=\"queue_full\"}")).isEqualTo(1.0);
      assertThat(post(router, stream("after")).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void aRequestPastTheQueueDeadlineIs429WithinASecondOfIt() throws Exception {
    try (FakeBackend engine = new FakeBackend("one");
        KvrouteServer router = KvrouteServer.start(limited(List.of(engine.uri()), 1, 10, Duration.ofMillis(500)))) {
      CompletableFuture<HttpResponse<String>> running = postAsync(router, stream("running"), "x-fake", "events=2;interval-ms=2000");
      await().atMost(Duration.ofSeconds(10)).until(() -> engine.received.size() == 1);
      long t0 = System.nanoTime();
      HttpResponse<String> late = post(router, stream("late"));
      Duration took = Duration.ofNanos(System.nanoTime() - t0);
      assertThat(late.statusCode()).isEqualTo(429);
      assertThat(late.headers().firstValue("retry-after")).isPresent();
      assertThat(late.body()).contains("waited 500 ms in the router's queue");
      assertThat(took).isGreaterThanOrEqualTo(Duration.ofMillis(500)).isLessThan(Duration.ofMillis(1500));
      assertThat(engine.received).hasSize(1);
      assertThat(running.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
  }

  @Test
  void aClientThatDisconnectsWhileQueuedLeavesTheQueueAtOnce() throws Exception {
    try (FakeBackend engine = new FakeBackend("one");
        KvrouteServer router = KvrouteServer.start(limited(List.of(engine.uri()), 1, 10, Duration.ofSeconds(20)))) {
      CompletableFuture<HttpResponse<String>> running = postAsync(router, stream("running"), "x-fake", "events=2;interval-ms=1500");
      await().atMost(Duration.ofSeconds(10)).until(() -> engine.received.size() == 1);
      try (RawHttp c = new RawHttp(router.port())) {
        String s = stream("gone");
        c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nContent-Length: " + s.length() + "\r\n\r\n" + s);
        await().atMost(Duration.ofSeconds(10)).until(() -> metric(router, QUEUED) == 1.0);
      }
      await().atMost(Duration.ofSeconds(5)).until(() ->
          metric(router, "kvroute_admission_requests_total{result=\"cancelled\"}") == 1.0
              && metric(router, "kvroute_admission_queue_length{priority=\"normal\"}") == 0);
      assertThat(running.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      assertThat(post(router, stream("next")).statusCode()).isEqualTo(200);
      assertThat(engine.received).extracting(FakeBackend.Received::bodyText).noneMatch(b -> b.contains("gone"));
    }
  }

  @Test
  void aHighPriorityRequestLeavesTheQueueBeforeEarlierLowPriorityOnes() throws Exception {
    try (FakeBackend engine = new FakeBackend("one");
        KvrouteServer router = KvrouteServer.start(limited(List.of(engine.uri()), 1, 10, Duration.ofSeconds(20)))) {
      CompletableFuture<HttpResponse<String>> running = postAsync(router, stream("running"), "x-fake", "events=2;interval-ms=800");
      await().atMost(Duration.ofSeconds(10)).until(() -> engine.received.size() == 1);
      List<CompletableFuture<HttpResponse<String>>> all = new java.util.ArrayList<>();
      for (int i = 0; i < 3; i++) {
        all.add(postAsync(router, "{\"messages\":[{\"role\":\"user\",\"content\":\"low" + i + "\"}],\"stream\":true,\"priority\":5}"));
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> metric(router, QUEUED) == 3.0);
      all.add(postAsync(router, stream("high"), "x-kvroute-priority", "-1"));
      await().atMost(Duration.ofSeconds(10)).until(() -> metric(router, QUEUED) == 4.0);
      assertThat(metric(router, "kvroute_admission_queue_length{priority=\"low\"}")).isEqualTo(3.0);
      assertThat(metric(router, "kvroute_admission_queue_length{priority=\"high\"}")).isEqualTo(1.0);
      for (CompletableFuture<HttpResponse<String>> f : all) {
        assertThat(f.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      }
      assertThat(running.get(20, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      assertThat(engine.received.get(1).bodyText()).contains("high");
    }
  }

  @Test
  void noHealthyBackendIs503WithRetryAfter() throws Exception {
    try (FakeBackend engine = new FakeBackend("down");
        KvrouteServer router = KvrouteServer.start(base(List.of(engine.uri()), Duration.ofSeconds(5), Duration.ofSeconds(5)))) {
      engine.healthy(false);
      await().atMost(Duration.ofSeconds(10)).until(() -> http.send(HttpRequest.newBuilder(router.uri().resolve("/ready")).build(),
          HttpResponse.BodyHandlers.ofString()).statusCode() == 503);
      HttpResponse<String> r = post(router, STREAM);
      assertThat(r.statusCode()).isEqualTo(503);
      assertThat(r.headers().firstValue("retry-after")).hasValue("1");
      assertThat(r.body()).contains("no healthy backend");
      HttpResponse<String> models = http.send(HttpRequest.newBuilder(router.uri().resolve("/v1/models")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(models.statusCode()).isEqualTo(503);
      assertThat(models.headers().firstValue("retry-after")).as("the merged model list's 503 too").hasValue("1");
    }
  }
}
