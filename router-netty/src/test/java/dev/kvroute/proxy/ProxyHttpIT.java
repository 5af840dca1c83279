package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.LimitConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.TimeoutConfig;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The proxy's HTTP behaviour against scriptable fake backends: byte-for-byte forwarding, header
 * rules, framing, limits and errors, local endpoints.
 */
@ExtendWith(NettyLeakExtension.class)
@TestMethodOrder(MethodOrderer.MethodName.class)
final class ProxyHttpIT {
  static final String CHAT = "{\"model\": \"fake-model\",  \"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}],"
      + " \"unknown_field\": {\"kept\": [1, 2.50, true]}, \"max_tokens\": 4}";

  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> A = new ServerExtension<>(() -> new FakeBackend("a", "model-a"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<FakeBackend> B = new ServerExtension<>(() -> new FakeBackend("b", "model-b"));

  @RegisterExtension
  @Order(3)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> KvrouteServer.start(
      ProxyConfig.defaults()
          .withPort(0)
          .withAdminPort(0)
          .withEventLoopThreads(1) // one loop here catches ordering assumptions; the other ITs use several
          .withPolicy("round-robin")
          .withLimits(new LimitConfig(64 << 10, 4096, 2048))
          .withTimeouts(new TimeoutConfig(Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(1), Duration.ofSeconds(60)))
          .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(200), Duration.ofSeconds(1), 2, 1, Duration.ZERO))
          .withBackendUrls(List.of(A.get().uri(), B.get().uri()))));

  /** Every test leaves no lease behind (checked after each test, naming the one that leaked). */
  @RegisterExtension
  @Order(4)
  static final LeaseCheckExtension LEASES = new LeaseCheckExtension(() -> ROUTER.get());

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private URI uri(String path) {
    return ROUTER.get().uri().resolve(path);
  }

  private FakeBackend backendNamed(String header) {
    return header.equals(A.get().uri().getHost() + ":" + A.get().port()) ? A.get() : B.get();
  }

  @Test
  void bodyIsForwardedByteForByteWithHopByHopHeadersRemoved() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      byte[] body = CHAT.getBytes(StandardCharsets.UTF_8);
      c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: router\r\nContent-Type: application/json\r\n"
          + "Content-Length: " + body.length + "\r\n"
          + "Connection: keep-alive, x-private\r\nx-private: secret\r\nKeep-Alive: timeout=9\r\nTE: trailers\r\n"
          + "Proxy-Authorization: Basic Zm9v\r\nAuthorization: Bearer user-key\r\nx-custom: kept\r\n\r\n");
      c.send(body);
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      String chosen = r.header("x-kvroute-backend");
      assertThat(chosen).isNotNull();
      FakeBackend.Received got = backendNamed(chosen).last();
      assertThat(got.body()).isEqualTo(body);
      assertThat(got.headers().get("x-private")).isNull();
      assertThat(got.headers().get("keep-alive")).isNull();
      assertThat(got.headers().get("te")).isNull();
      assertThat(got.headers().get("proxy-authorization")).isNull();
      assertThat(got.headers().get("connection")).isNull();
      assertThat(got.headers().get("authorization")).isEqualTo("Bearer user-key");
      assertThat(got.headers().get("x-custom")).isEqualTo("kept");
      assertThat(got.headers().get("x-request-id")).isNotBlank();
      assertThat(got.headers().get("host")).isEqualTo("127.0.0.1:" + backendNamed(chosen).port());
      assertThat(got.headers().getInt("content-length")).isEqualTo(body.length);
      assertThat(r.header("x-request-id")).isEqualTo(got.headers().get("x-request-id"));
      assertThat(r.header("keep-alive")).as("hop-by-hop header of the backend's response").isNull();
      assertThat(r.header("content-length")).isEqualTo(String.valueOf(r.body().length));
      assertThat(r.header("transfer-encoding")).isNull();
      assertThat(r.bodyText()).contains("\"usage\"");
    }
  }

  /** The sum of every series of {@code name} in the router's metrics. */
  private static double metricSum(String name) {
    double sum = 0;
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^" + java.util.regex.Pattern.quote(name)
        + "(\\{[^}]*\\})? (\\S+)$").matcher(ROUTER.get().scrapeMetrics());
    while (m.find()) {
      sum += Double.parseDouble(m.group(2));
    }
    return sum;
  }

  @Test
  void usageNoEngineCouldSendIsCountedAndNotRecorded() throws Exception {
    double implausible = metricSum("kvroute_usage_reports_total{result=\"implausible\"}");
    double reports = metricSum("kvroute_engine_prompt_tokens_count");
    double promptSum = metricSum("kvroute_engine_prompt_tokens_sum");
    // 2^63 - 1 prompt tokens, and more cached tokens than prompt tokens: neither can be true
    for (String usage : new String[] {"9223372036854775807/0", "12/5000", "40/32"}) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
          .header("x-fake", "usage=" + usage).POST(HttpRequest.BodyPublishers.ofString(CHAT)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).as("relayed as sent").contains("\"prompt_tokens\":" + usage.split("/")[0]);
    }
    // recorded when the exchange ends, just after the client has the last byte
    await().atMost(Duration.ofSeconds(5)).until(() -> metricSum("kvroute_engine_prompt_tokens_count") >= reports + 1);
    assertThat(metricSum("kvroute_usage_reports_total{result=\"implausible\"}")).isEqualTo(implausible + 2);
    assertThat(metricSum("kvroute_engine_prompt_tokens_count")).isEqualTo(reports + 1);
    assertThat(metricSum("kvroute_engine_prompt_tokens_sum")).isEqualTo(promptSum + 40);
  }

  @Test
  void sglangGenerateNonStreamingAndStreaming() throws Exception {
    String body = "{\"text\":\"The capital of France is\",\"sampling_params\":{\"max_new_tokens\":4}}";
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/generate"))
        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    FakeBackend got = backendNamed(r.headers().firstValue("x-kvroute-backend").orElseThrow());
    assertThat(got.last().uri()).isEqualTo("/generate");
    assertThat(got.last().bodyText()).isEqualTo(body);
    String streamBody = "{\"input_ids\":[1,2,3,4,5],\"stream\":true}";
    HttpResponse<String> s = http.send(HttpRequest.newBuilder(uri("/generate"))
        .POST(HttpRequest.BodyPublishers.ofString(streamBody)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(s.statusCode()).isEqualTo(200);
    assertThat(s.headers().firstValue("content-type")).hasValueSatisfying(ct -> assertThat(ct).startsWith("text/event-stream"));
    assertThat(s.body()).endsWith("data: [DONE]\n\n");
  }

  @Test
  void completionsStreamingAndChatNonStreamingThroughHttpClient() throws Exception {
    HttpResponse<String> c = http.send(HttpRequest.newBuilder(uri("/v1/completions"))
        .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":[1,2,3],\"stream\":true}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(c.statusCode()).isEqualTo(200);
    assertThat(c.body()).contains("wörd0").endsWith("data: [DONE]\n\n");
    HttpResponse<String> n = http.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
        .POST(HttpRequest.BodyPublishers.ofString(CHAT)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(n.statusCode()).isEqualTo(200);
    assertThat(n.body()).contains("\"chat.completion\"");
  }

  @Test
  void clientRequestIdIsKept() throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
        .header("X-Request-Id", "req-42").POST(HttpRequest.BodyPublishers.ofString(CHAT)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("x-request-id")).hasValue("req-42");
    assertThat(backendNamed(r.headers().firstValue("x-kvroute-backend").orElseThrow()).last().headers().get("x-request-id"))
        .isEqualTo("req-42");
  }

  @Test
  void streamIsRelayedByteIdenticalWithChunkedFraming() throws Exception {
    String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"stream please\"}],\"stream\":true}";
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nx-fake: events=5;trailer\r\nContent-Length: "
          + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body);
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.chunked()).isTrue();
      assertThat(r.header("content-length")).isNull();
      assertThat(r.header("content-type")).startsWith("text/event-stream");
      StringBuilder expected = new StringBuilder();
      for (int i = 0; i < 5; i++) {
        expected.append("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,")
            .append("\"delta\":{\"content\":\" wörd").append(i).append("\"},\"finish_reason\":null}]}\n\n");
      }
      expected.append("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":")
          .append("{\"prompt_tokens\":10,\"total_tokens\":12,\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n")
          .append("data: [DONE]\n\n");
      assertThat(r.body()).isEqualTo(expected.toString().getBytes(StandardCharsets.UTF_8));
      // the connection stays usable
      c.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n");
      assertThat(c.read().status()).isEqualTo(200);
    }
  }

  @Test
  void expectContinueIsAnsweredAndNotForwarded() throws Exception {
    byte[] body = CHAT.getBytes(StandardCharsets.UTF_8);
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nExpect: 100-continue\r\nContent-Length: "
          + body.length + "\r\n\r\n");
      RawHttp.Response cont = c.read();
      assertThat(cont.status()).isEqualTo(100);
      c.send(body);
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      FakeBackend.Received got = backendNamed(r.header("x-kvroute-backend")).last();
      assertThat(got.headers().get("expect")).isNull();
      assertThat(got.body()).isEqualTo(body);
    }
  }

  @Test
  void expectContinueWithTooLargeLengthIsRefusedWithoutReadingTheBody() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nExpect: 100-continue\r\nContent-Length: 10000000\r\n\r\n");
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(413);
      assertThat(r.bodyText()).contains("\"code\":413").contains("RequestTooLargeError");
      assertThat(r.header("connection")).isEqualTo("close");
    }
  }

  @Test
  void bodyOverTheLimitIs413() throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
        .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"" + "x".repeat(70_000) + "\"}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(413);
    assertThat(r.body()).contains("\"error\"").contains("65536");
  }

  @Test
  void chunkedBodyOverTheLimitIs413() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n");
      String chunk = "y".repeat(8192);
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < 10; i++) {
        sb.append(Integer.toHexString(chunk.length())).append("\r\n").append(chunk).append("\r\n");
      }
      sb.append("0\r\n\r\n");
      c.send(sb.toString());
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(413);
      assertThat(r.bodyText()).contains("\"type\":\"RequestTooLargeError\"");
      assertThat(c.closedByPeer()).isTrue();
    }
    assertThat(A.get().received).noneMatch(x -> x.uri().equals("/v1/completions") && x.body().length > 60_000);
  }

  @Test
  void chunkedBodyWithinTheLimitIsForwardedWithContentLength() throws Exception {
    String prompt = "{\"prompt\": \"chunked upload\", \"max_tokens\": 3}";
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n"
          + "5\r\n" + prompt.substring(0, 5) + "\r\n"
          + Integer.toHexString(prompt.length() - 5) + "\r\n" + prompt.substring(5) + "\r\n0\r\n\r\n");
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      FakeBackend.Received got = backendNamed(r.header("x-kvroute-backend")).last();
      assertThat(got.bodyText()).isEqualTo(prompt);
      assertThat(got.headers().get("transfer-encoding")).isNull();
      assertThat(got.headers().getInt("content-length")).isEqualTo(prompt.length());
    }
  }

  @Test
  void headerBlockOverTheLimitIs431() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nx-big: " + "h".repeat(5000) + "\r\nContent-Length: 2\r\n\r\n{}");
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(431);
      assertThat(r.bodyText()).contains("\"code\":431");
    }
  }

  @Test
  void requestLineOverTheLimitIs414() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("GET /v1/models?" + "q".repeat(3000) + " HTTP/1.1\r\nHost: r\r\n\r\n");
      assertThat(c.read().status()).isEqualTo(414);
    }
  }

  @Test
  void malformedJsonIs400() throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/v1/chat/completions"))
        .POST(HttpRequest.BodyPublishers.ofString("{\"messages\": [")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("\"type\":\"BadRequestError\"").contains("\"code\":400");
  }

  @Test
  void missingPromptIs400WithParam() throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/v1/completions"))
        .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\"}")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(r.body()).contains("prompt");
  }

  @Test
  void getOnAGenerationEndpointIs405AndUnknownPathIs404() throws Exception {
    assertThat(http.send(HttpRequest.newBuilder(uri("/v1/chat/completions")).build(),
        HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(405);
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/nope")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(404);
    assertThat(r.body()).contains("NotFoundError");
  }

  @Test
  void wrongMethodOnTheRoutersOwnPathsIs405WithAllow() throws Exception {
    for (String path : List.of("/health", "/ready", "/metrics")) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri(path)).POST(HttpRequest.BodyPublishers.noBody()).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(path).isEqualTo(405);
      assertThat(r.headers().firstValue("allow")).as(path).hasValueSatisfying(a -> assertThat(a).startsWith("GET"));
      assertThat(r.body()).contains("MethodNotAllowedError");
    }
  }

  @Test
  void healthReadyAndMetrics() throws Exception {
    assertThat(http.send(HttpRequest.newBuilder(uri("/health")).build(), HttpResponse.BodyHandlers.ofString()).statusCode())
        .isEqualTo(200);
    assertThat(http.send(HttpRequest.newBuilder(uri("/ready")).build(), HttpResponse.BodyHandlers.ofString()).statusCode())
        .isEqualTo(200);
    http.send(HttpRequest.newBuilder(uri("/v1/chat/completions")).POST(HttpRequest.BodyPublishers.ofString(CHAT)).build(),
        HttpResponse.BodyHandlers.ofString());
    // the router records a request's metrics when its last write completes: possibly just after the client read it
    await().atMost(Duration.ofSeconds(2)).until(() -> ROUTER.get().scrapeMetrics().contains("kvroute_engine_cached_tokens"));
    HttpResponse<String> m = http.send(HttpRequest.newBuilder(uri("/metrics")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(m.statusCode()).isEqualTo(200);
    assertThat(m.body())
        .contains("kvroute_requests_total{backend=")
        .contains("kvroute_request_duration_seconds_bucket")
        .contains("kvroute_ttft_seconds_bucket")
        .contains("kvroute_routing_decisions_total{policy=\"round-robin\",rule=\"round_robin\"}")
        .contains("kvroute_backend_inflight_requests{backend=")
        .contains("kvroute_index_size_tokens{backend=")
        .contains("kvroute_circuit_state{backend=")
        .contains("kvroute_engine_cached_tokens")
        // round-robin reads nothing of the prompt: not tokenized, nothing predicted to compare
        .doesNotContain("kvroute_prompt_tokens")
        .doesNotContain("kvroute_prefix_predicted_tokens")
        .doesNotContain("kvroute_prefix_prediction_error")
        .doesNotContain("kvroute_index_cached_tokens");
  }

  @Test
  void modelsAreMergedFromTheBackends() throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/v1/models")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).contains("\"object\":\"list\"").contains("model-a").contains("model-b");
  }

  @Test
  void otherV1PathsPassThrough() throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/v1/embeddings"))
        .POST(HttpRequest.BodyPublishers.ofString("{\"input\":\"x\"}")).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(backendNamed(r.headers().firstValue("x-kvroute-backend").orElseThrow()).last().uri()).isEqualTo("/v1/embeddings");
  }

  @Test
  void pipelinedRequestsAreAnsweredInOrder() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      String one = "{\"prompt\":\"one\"}";
      String two = "{\"prompt\":\"two\",\"stream\":true}";
      c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nx-fake: delay-ms=200\r\nContent-Length: " + one.length() + "\r\n\r\n" + one
          + "POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: " + two.length() + "\r\n\r\n" + two
          + "GET /health HTTP/1.1\r\nHost: r\r\n\r\n");
      RawHttp.Response r1 = c.read();
      RawHttp.Response r2 = c.read();
      RawHttp.Response r3 = c.read();
      assertThat(r1.header("content-type")).isEqualTo("application/json");
      assertThat(r2.header("content-type")).startsWith("text/event-stream");
      assertThat(r3.bodyText()).contains("ok");
    }
  }

  @Test
  void http10ClientGetsAnAnswer() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      String s = "{\"prompt\":\"old client\",\"stream\":true}";
      c.send("POST /v1/completions HTTP/1.0\r\nContent-Length: " + s.length() + "\r\n\r\n" + s);
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.bodyText()).endsWith("data: [DONE]\n\n");
    }
  }

  @Test
  void backendClosingMidStreamEndsTheClientResponseWithAnError() throws Exception {
    String s = "{\"prompt\":\"p\",\"stream\":true}";
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nx-fake: events=5;close-after=2\r\nContent-Length: "
          + s.length() + "\r\n\r\n" + s);
      // as vLLM reports an error mid-stream: an error event, then [DONE]
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.bodyText()).contains("wörd1").contains("data: {\"error\":{\"message\":\"backend ")
          .contains("closed the connection mid-response").endsWith("data: [DONE]\n\n");
    }
  }

  @Test
  void idleTimeoutBetweenChunksEndsTheStream() throws Exception {
    String s = "{\"prompt\":\"p\",\"stream\":true}";
    long t0 = System.nanoTime();
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nx-fake: events=3;interval-ms=5000\r\nContent-Length: "
          + s.length() + "\r\n\r\n" + s);
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.bodyText()).contains("sent nothing for").endsWith("data: [DONE]\n\n");
    }
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(4));
  }

  @Test
  void longHealthyStreamIsNotCutByTheTimeouts() throws Exception {
    // 12 events 250 ms apart: 3 s in total, beyond both the first-byte (2 s) and idle (1 s) timeouts
    String s = "{\"prompt\":\"p\",\"stream\":true}";
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nx-fake: events=12;interval-ms=250\r\nContent-Length: "
          + s.length() + "\r\n\r\n" + s);
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.bodyText()).contains("wörd11").endsWith("data: [DONE]\n\n");
    }
  }

  @Test
  void firstByteTimeoutIsRetriedThenAnswered504() throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/v1/completions"))
        .header("x-fake", "delay-ms=4000").POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"slow\"}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(504);
    assertThat(r.body()).contains("GatewayTimeoutError");
    assertThat(ROUTER.get().scrapeMetrics()).contains("kvroute_retries_total{reason=\"first_byte_timeout\"}");
  }

  @Test
  void clientDisconnectBeforeTheFirstByteAbortsTheUpstreamRequest() throws Exception {
    // a long prefill: nothing flows from the backend, and yet the client's departure must reach it
    int requestsBefore = A.get().received.size() + B.get().received.size();
    int closedBefore = A.get().connectionsClosed.get() + B.get().connectionsClosed.get();
    String s = "{\"prompt\":\"p\",\"stream\":true}";
    RawHttp c = new RawHttp(ROUTER.get().port());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nx-fake: stall\r\nContent-Length: " + s.length() + "\r\n\r\n" + s);
    await().atMost(Duration.ofSeconds(1)).until(() -> A.get().received.size() + B.get().received.size() > requestsBefore);
    long t0 = System.nanoTime();
    c.close();
    await().atMost(Duration.ofSeconds(1)).until(() -> A.get().connectionsClosed.get() + B.get().connectionsClosed.get() > closedBefore);
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(1));
  }

  @Test
  void clientDisconnectMidStreamAbortsTheUpstreamRequest() throws Exception {
    int abortedBefore = A.get().abortedStreams.get() + B.get().abortedStreams.get();
    String s = "{\"prompt\":\"p\",\"stream\":true}";
    RawHttp c = new RawHttp(ROUTER.get().port());
    c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nx-fake: events=200;interval-ms=20\r\nContent-Length: "
        + s.length() + "\r\n\r\n" + s);
    assertThat(c.line()).startsWith("HTTP/1.1 200");
    while (!c.line().startsWith("data:")) {
      // headers and the first chunk size
    }
    long t0 = System.nanoTime();
    c.close();
    await().atMost(Duration.ofSeconds(1)).until(() -> A.get().abortedStreams.get() + B.get().abortedStreams.get() > abortedBefore);
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(Duration.ofSeconds(1));
    await().atMost(Duration.ofSeconds(1)).until(() -> ROUTER.get().core().loads().load(dev.kvroute.core.BackendId.of(
        A.get().uri().getHost() + ":" + A.get().port())).inFlightRequests() == 0
        && ROUTER.get().core().loads().load(dev.kvroute.core.BackendId.of(
            B.get().uri().getHost() + ":" + B.get().port())).inFlightRequests() == 0);
    await().atMost(Duration.ofSeconds(1)).until(() -> ROUTER.get().scrapeMetrics().contains("outcome=\"cancelled\""));
  }
}
