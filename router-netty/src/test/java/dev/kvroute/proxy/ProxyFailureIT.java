package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.core.BackendId;
import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.engine.server.MockEngineServer;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.CircuitBreakerConfig;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.RetryConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Failures around the proxy: retries (and when not to), circuit breaking, health, stale pooled
 * connections, a backend killed mid-run.
 */
@ExtendWith(NettyLeakExtension.class)
final class ProxyFailureIT {
  static final String CHAT = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  static ProxyConfig base(String policy, List<URI> backends) {
    return ProxyConfig.defaults().withPort(0).withAdminPort(-1).withPolicy(policy)
        .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(100), Duration.ofSeconds(1), 2, 1, Duration.ZERO))
        .withBackendUrls(backends);
  }

  HttpResponse<String> post(KvrouteServer router, String path, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(router.uri().resolve(path)).timeout(Duration.ofSeconds(20))
        .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  /**
   * A port that refuses connections for as long as it is open: bound by a socket that never listens,
   * so no other process can take it meanwhile (a closed ephemeral port could be reused by anyone).
   */
  static final class DeadPort implements AutoCloseable {
    final java.net.Socket socket = new java.net.Socket();
    final URI uri;

    DeadPort() throws Exception {
      socket.bind(new java.net.InetSocketAddress("127.0.0.1", 0));
      uri = URI.create("http://127.0.0.1:" + socket.getLocalPort());
    }

    @Override
    public void close() throws java.io.IOException {
      socket.close();
    }
  }

  static BackendId id(FakeBackend b) {
    return BackendId.of("127.0.0.1:" + b.port());
  }

  @Test
  void status503IsRetriedOnAnotherBackend() throws Exception {
    try (FakeBackend bad = new FakeBackend("bad");
        FakeBackend good = new FakeBackend("good");
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(bad.uri(), good.uri())))) {
      bad.forcedStatus.set(503);
      for (int i = 0; i < 4; i++) {
        HttpResponse<String> r = post(router, "/v1/chat/completions", CHAT);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-kvroute-backend")).hasValue(id(good).name());
      }
      assertThat(bad.received).hasSizeGreaterThanOrEqualTo(1);
      assertThat(router.scrapeMetrics()).contains("kvroute_retries_total{reason=\"status_503\"}");
    }
  }

  @Test
  void status4xxIsNeverRetried() throws Exception {
    try (FakeBackend a = new FakeBackend("a");
        FakeBackend b = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(a.uri(), b.uri())))) {
      HttpResponse<String> r = post(router, "/v1/chat/completions", CHAT, "x-fake", "status=400");
      assertThat(r.statusCode()).isEqualTo(400);
      assertThat(r.body()).contains("fake 400");
      assertThat(a.received.size() + b.received.size()).isEqualTo(1);
      assertThat(router.scrapeMetrics()).doesNotContain("kvroute_retries_total");
    }
  }

  @Test
  void aRejectedRequestLeavesNothingInTheBackendsIndexView() throws Exception {
    try (FakeBackend only = new FakeBackend("only");
        KvrouteServer router = KvrouteServer.start(base("cache-aware", List.of(only.uri())))) {
      BackendId backend = id(only);
      String longChat = "{\"messages\":[{\"role\":\"user\",\"content\":\"" + "many words ".repeat(200) + "\"}]}";
      assertThat(post(router, "/v1/chat/completions", longChat, "x-fake", "status=400").statusCode()).isEqualTo(400);
      assertThat(post(router, "/v1/chat/completions", longChat, "x-fake", "status=500").statusCode()).isEqualTo(500);
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(backend).inFlightRequests() == 0);
      assertThat(router.core().index().sizeTokens(backend)).as("rejected: the engine caches nothing").isZero();

      assertThat(post(router, "/v1/chat/completions", longChat).statusCode()).isEqualTo(200);
      await().atMost(Duration.ofSeconds(5)).until(() -> router.core().loads().load(backend).inFlightRequests() == 0);
      assertThat(router.core().index().sizeTokens(backend)).as("served: cached").isGreaterThan(300);
    }
  }

  @Test
  void lastBackend503IsRelayedWhenNoOtherBackendIsLeft() throws Exception {
    try (FakeBackend only = new FakeBackend("only");
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(only.uri())))) {
      only.forcedStatus.set(503);
      HttpResponse<String> r = post(router, "/v1/chat/completions", CHAT);
      assertThat(r.statusCode()).isEqualTo(503);
      assertThat(r.body()).contains("fake 503");
    }
  }

  @Test
  void connectFailureIsRetriedAndOpensTheCircuit() throws Exception {
    try (DeadPort deadPort = new DeadPort();
        FakeBackend good = new FakeBackend("good");
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(deadPort.uri, good.uri()))
            .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1, Duration.ZERO))
            .withCircuitBreaker(new CircuitBreakerConfig(true, 2, Duration.ofSeconds(30), 1)))) {
      for (int i = 0; i < 6; i++) {
        HttpResponse<String> r = post(router, "/v1/completions", "{\"prompt\":\"p" + i + "\"}");
        assertThat(r.statusCode()).isEqualTo(200);
      }
      URI dead = deadPort.uri;
      String m = router.scrapeMetrics();
      assertThat(m).contains("kvroute_upstream_errors_total{backend=\"127.0.0.1:" + dead.getPort() + "\",kind=\"connect\"} 2.0");
      assertThat(m).contains("kvroute_circuit_state{backend=\"127.0.0.1:" + dead.getPort() + "\"} 1.0");
      assertThat(m).contains("kvroute_retries_total{reason=\"connect\"} 2.0");
    }
  }

  @Test
  void responsesThatBreakMidBodyOpenTheCircuit() throws Exception {
    try (FakeBackend breaking = new FakeBackend("breaking");
        FakeBackend good = new FakeBackend("good");
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(breaking.uri(), good.uri()))
            .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1, Duration.ZERO))
            .withCircuitBreaker(new CircuitBreakerConfig(true, 2, Duration.ofSeconds(30), 1)))) {
      String stream = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";
      // the breaking backend answers 200 and closes after the first event, every time
      breaking.forcedDirectives.set("close-after=1");
      for (int i = 0; i < 8 && breaking.received.size() < 2; i++) {
        try {
          post(router, "/v1/chat/completions", stream);
        } catch (java.io.IOException cut) {
          // the client sees its response cut: expected for the breaking backend's share
        }
      }
      assertThat(breaking.received).hasSize(2);
      String m = router.scrapeMetrics();
      assertThat(m).contains("kvroute_circuit_state{backend=\"" + id(breaking).name() + "\"} 1.0");
      for (int i = 0; i < 4; i++) {
        assertThat(post(router, "/v1/chat/completions", CHAT).headers().firstValue("x-kvroute-backend"))
            .hasValue(id(good).name());
      }
      assertThat(breaking.received).hasSize(2);
    }
  }

  @Test
  void allBackendsDownIs502AndNoHealthyBackendIs503() throws Exception {
    try (DeadPort dead1 = new DeadPort();
        DeadPort dead2 = new DeadPort();
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(dead1.uri, dead2.uri))
        .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(100), Duration.ofMillis(500), 2, 1, Duration.ZERO)))) {
      HttpResponse<String> first = post(router, "/v1/completions", "{\"prompt\":\"p\"}");
      assertThat(first.statusCode()).isIn(502, 503);
      await().atMost(Duration.ofSeconds(3)).until(() -> http.send(HttpRequest.newBuilder(router.uri().resolve("/ready")).build(),
          HttpResponse.BodyHandlers.ofString()).statusCode() == 503);
      HttpResponse<String> r = post(router, "/v1/completions", "{\"prompt\":\"p\"}");
      assertThat(r.statusCode()).isEqualTo(503);
      assertThat(r.body()).contains("no healthy backend").contains("ServiceUnavailableError");
    }
  }

  @Test
  void connectFailuresOnEveryBackendAre502() throws Exception {
    try (DeadPort dead1 = new DeadPort();
        DeadPort dead2 = new DeadPort();
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(dead1.uri, dead2.uri))
        .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1, Duration.ZERO)))) {
      HttpResponse<String> r = post(router, "/v1/completions", "{\"prompt\":\"p\"}");
      assertThat(r.statusCode()).isEqualTo(502);
      assertThat(r.body()).contains("BadGatewayError")
          .containsPattern("cannot connect to backend 127\\.0\\.0\\.1:\\d+: connection refused\"");
    }
  }

  @Test
  void unhealthyBackendIsSkippedAndComesBack() throws Exception {
    try (FakeBackend a = new FakeBackend("a");
        FakeBackend b = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(a.uri(), b.uri())))) {
      a.healthy(false);
      await().atMost(Duration.ofSeconds(3)).until(() -> router.scrapeMetrics()
          .contains("kvroute_backend_healthy{backend=\"" + id(a).name() + "\"} 0.0"));
      int before = a.received.size();
      for (int i = 0; i < 4; i++) {
        assertThat(post(router, "/v1/chat/completions", CHAT).headers().firstValue("x-kvroute-backend")).hasValue(id(b).name());
      }
      assertThat(a.received).hasSize(before);
      a.healthy(true);
      await().atMost(Duration.ofSeconds(3)).until(() -> router.scrapeMetrics()
          .contains("kvroute_backend_healthy{backend=\"" + id(a).name() + "\"} 1.0"));
    }
  }

  /**
   * A backend on raw sockets: answers each request with a small JSON body, except a request whose
   * body holds {@code "bad-chunk"}, answered with a chunked 200 whose second chunk size is no
   * number, and one whose body holds {@code "bad-status-N"}, answered with status code N.
   */
  static final class BadChunkBackend implements AutoCloseable {
    final java.net.ServerSocket server = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
    final Thread acceptor = new Thread(this::accept, "bad-chunk-backend");

    BadChunkBackend() throws java.io.IOException {
      acceptor.setDaemon(true);
      acceptor.start();
    }

    URI uri() {
      return URI.create("http://127.0.0.1:" + server.getLocalPort());
    }

    private void accept() {
      while (!server.isClosed()) {
        try {
          java.net.Socket s = server.accept();
          Thread t = new Thread(() -> serve(s), "bad-chunk-connection");
          t.setDaemon(true);
          t.start();
        } catch (java.io.IOException closed) {
          return;
        }
      }
    }

    private static void serve(java.net.Socket s) {
      try (s; var in = new java.io.BufferedInputStream(s.getInputStream()); var out = s.getOutputStream()) {
        while (true) {
          int length = 0;
          String line;
          StringBuilder head = new StringBuilder();
          while (!(line = readLine(in)).isEmpty()) {
            head.append(line).append('\n');
            if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
              length = Integer.parseInt(line.substring(15).trim());
            }
          }
          String body = new String(in.readNBytes(length), java.nio.charset.StandardCharsets.UTF_8);
          String reply;
          java.util.regex.Matcher badStatus = java.util.regex.Pattern.compile("bad-status-(\\d+)").matcher(body);
          if (badStatus.find()) {
            reply = "HTTP/1.1 " + badStatus.group(1) + " OK\r\nContent-Type: application/json\r\n"
                + "Content-Length: 2\r\n\r\n{}";
          } else if (body.contains("bad-chunk")) {
            reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "a\r\n{\"id\":\"x\",\r\nzz\r\n";
          } else {
            String json = "{\"id\":\"ok\",\"choices\":[],\"usage\":{\"prompt_tokens\":3}}";
            reply = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + json.length()
                + "\r\n\r\n" + json;
          }
          out.write(reply.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
          out.flush();
        }
      } catch (java.io.IOException | RuntimeException gone) {
        // the proxy closed the connection, or the test ended
      }
    }

    private static String readLine(java.io.InputStream in) throws java.io.IOException {
      StringBuilder sb = new StringBuilder();
      int b;
      while ((b = in.read()) != '\n') {
        if (b < 0) {
          throw new java.io.EOFException();
        }
        if (b != '\r') {
          sb.append((char) b);
        }
      }
      return sb.toString();
    }

    @Override
    public void close() throws java.io.IOException {
      server.close();
    }
  }

  @Test
  void aStatusCodeOfOtherThanThreeDigitsIsA502AtOnce() throws Exception {
    try (BadChunkBackend only = new BadChunkBackend();
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(only.uri()))
            // five failures in a row would open the circuit before the last, good request
            .withCircuitBreaker(new CircuitBreakerConfig(false, 5, Duration.ofSeconds(10), 2))
            .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1, Duration.ZERO)))) {
      // "0" and "099" were taken for 1xx and waited out to the first-byte timeout; "2000" was relayed
      for (String code : List.of("0", "099", "101", "2000", "2147483647")) {
        try (RawHttp c = new RawHttp(router.port())) {
          String bad = "{\"prompt\":\"bad-status-" + code + "\"}";
          c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: " + bad.length() + "\r\n\r\n" + bad);
          RawHttp.Response r = c.read();
          assertThat(r.status()).as(code).isEqualTo(502);
          assertThat(r.bodyText()).as(code).containsAnyOf("invalid status code", "switched protocols unasked");
        }
      }
      try (RawHttp c = new RawHttp(router.port())) {
        String ok = "{\"prompt\":\"fine\"}";
        c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: " + ok.length() + "\r\n\r\n" + ok);
        assertThat(c.read().status()).isEqualTo(200);
      }
    }
  }

  @Test
  void aMalformedChunkIsAnErrorAndItsConnectionIsNeverReused() throws Exception {
    try (BadChunkBackend only = new BadChunkBackend();
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(only.uri()))
            .withEventLoopThreads(1)
            .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1, Duration.ZERO)))) {
      try (RawHttp c = new RawHttp(router.port())) {
        String bad = "{\"prompt\":\"bad-chunk\"}";
        c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: " + bad.length() + "\r\n\r\n" + bad);
        // the body had started (its status line and first chunk relayed): the client sees a cut, not a
        // complete 200 (before the fix: a clean last chunk after 10 bytes)
        try {
          RawHttp.Response r = c.read();
          org.assertj.core.api.Assertions.fail("a cut body ended as a complete response: " + r.bodyText());
        } catch (java.io.IOException cut) {
          // expected: the connection closed mid-body
        }
      }
      // the next request, on the same event loop and upstream pool, is answered on a new connection
      // (before the fix it went to the poisoned pooled one and waited for the first-byte timeout)
      for (int i = 0; i < 2; i++) {
        HttpResponse<String> ok = post(router, "/v1/completions", "{\"prompt\":\"fine\"}");
        assertThat(ok.statusCode()).isEqualTo(200);
        assertThat(ok.body()).contains("\"id\":\"ok\"");
      }
      assertThat(router.scrapeMetrics()).contains("kind=\"protocol\"");
    }
  }

  @Test
  void stalePooledConnectionIsRetriedOnceOnAFreshOne() throws Exception {
    try (FakeBackend only = new FakeBackend("only");
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(only.uri()))
            .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1, Duration.ZERO)))) {
      try (RawHttp c = new RawHttp(router.port())) {
        // both requests on one client connection, hence one event loop and one upstream pool
        c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: 14\r\n\r\n{\"prompt\":\"a\"}");
        assertThat(c.read().status()).isEqualTo(200);
        int opened = only.connectionsOpened.get();
        c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nx-fake: drop-reused\r\nContent-Length: 14\r\n\r\n{\"prompt\":\"b\"}");
        RawHttp.Response r = c.read();
        assertThat(r.status()).isEqualTo(200);
        assertThat(only.connectionsOpened.get()).isEqualTo(opened + 1);
      }
      String m = router.scrapeMetrics();
      assertThat(m).contains("kvroute_retries_total{reason=\"stale_connection\"} 1.0");
      assertThat(m).contains("kvroute_upstream_connections_total{source=\"pooled\"} 1.0");
      assertThat(m).doesNotContain("kvroute_circuit_transitions_total");
    }
  }

  @Test
  void pooledConnectionsAreReusedAndEvictedWhenIdle() throws Exception {
    try (FakeBackend only = new FakeBackend("only");
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(only.uri()))
            .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1, Duration.ZERO))
            .withPool(new dev.kvroute.proxy.config.PoolConfig(Duration.ofMillis(300), 8)))) {
      try (RawHttp c = new RawHttp(router.port())) {
        for (int i = 0; i < 3; i++) {
          c.send("POST /v1/completions HTTP/1.1\r\nHost: r\r\nContent-Length: 14\r\n\r\n{\"prompt\":\"a\"}");
          assertThat(c.read().status()).isEqualTo(200);
        }
      }
      // capacity discovery used one control connection; the three requests shared one pooled connection
      assertThat(router.scrapeMetrics()).contains("kvroute_upstream_connections_total{source=\"pooled\"} 2.0");
      await().atMost(Duration.ofSeconds(2)).until(() -> only.connectionsClosed.get() == only.connectionsOpened.get());
      assertThat(router.scrapeMetrics()).contains("kvroute_upstream_idle_connections 0.0");
    }
  }

  @Test
  void backendKilledMidRunNewRequestsGoElsewhereInFlightOnesFailNothingHangs() throws Exception {
    MockEngineOptions opts = MockEngineOptions.builder().host("127.0.0.1").port(0)
        .engine(EngineConfig.builder().cost(CostModel.linear(10_000, 0.020, 100)).build())
        .timeScale(5).enablePromptTokensDetails(true).build();
    MockEngineServer victim = MockEngineServer.start(opts);
    boolean victimClosed = false;
    try (MockEngineServer survivor = MockEngineServer.start(opts);
        KvrouteServer router = KvrouteServer.start(base("round-robin", List.of(URI.create(victim.url()), URI.create(survivor.url())))
            // what is tested here is the request path (retries, circuit), not the probes: on a loaded
            // machine a busy engine may miss probe deadlines and be marked unhealthy
            .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(5), 3, 1, Duration.ZERO))
            .withRetries(new RetryConfig(2)))) {
      // an engine's first request loads its tokenizer on its event loop (a second or more, during which
      // it answers nothing, health probes included): warm both up before the run
      for (MockEngineServer e : List.of(victim, survivor)) {
        http.send(HttpRequest.newBuilder(URI.create(e.url() + "/v1/completions")).POST(HttpRequest.BodyPublishers.ofString(
            "{\"model\":\"" + MockEngineOptions.DEFAULT_MODEL + "\",\"prompt\":\"warm up\",\"max_tokens\":1}")).build(),
            HttpResponse.BodyHandlers.ofString());
      }
      String survivorId = URI.create(survivor.url()).getHost() + ":" + survivor.port();
      String victimId = URI.create(victim.url()).getHost() + ":" + victim.port();
      List<CompletableFuture<HttpResponse<String>>> streams = new ArrayList<>();
      for (int i = 0; i < 6; i++) {
        String body = "{\"model\":\"" + MockEngineOptions.DEFAULT_MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\"long "
            + i + "\"}],\"max_tokens\":1500,\"ignore_eos\":true,\"stream\":true}";
        streams.add(http.sendAsync(HttpRequest.newBuilder(router.uri().resolve("/v1/chat/completions"))
            .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
            HttpResponse.BodyHandlers.ofString()));
      }
      await().atMost(Duration.ofSeconds(5)).until(() ->
          router.core().loads().load(BackendId.of(victimId)).activeDecodes() > 0
              && router.core().loads().load(BackendId.of(survivorId)).activeDecodes() > 0);
      victim.close();
      victimClosed = true;
      // new requests right after the kill all succeed, on the survivor
      for (int i = 0; i < 8; i++) {
        HttpResponse<String> r = post(router, "/v1/chat/completions",
            "{\"model\":\"" + MockEngineOptions.DEFAULT_MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\"after " + i
                + "\"}],\"max_tokens\":2}");
        assertThat(r.statusCode()).as(() -> r.body() + router.scrapeMetrics().lines()
            .filter(l -> l.contains("healthy{") || l.contains("circuit") || l.contains("upstream_errors")).toList()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-kvroute-backend")).hasValue(survivorId);
      }
      // in-flight streams: those on the victim fail, those on the survivor finish; none hangs
      int failed = 0;
      int ok = 0;
      for (CompletableFuture<HttpResponse<String>> f : streams) {
        try {
          HttpResponse<String> r = f.get(15, TimeUnit.SECONDS);
          assertThat(r.statusCode()).isEqualTo(200);
          assertThat(r.body()).endsWith("data: [DONE]\n\n");
          if (r.body().contains("data: {\"error\":")) {
            failed++; // broken off on the victim: ended with an SSE error event
          } else {
            ok++;
          }
        } catch (java.util.concurrent.ExecutionException e) {
          assertThat(e.getCause()).isInstanceOf(java.io.IOException.class);
          failed++;
        }
      }
      assertThat(failed).isPositive();
      assertThat(ok).isPositive();
      await().atMost(Duration.ofSeconds(2)).until(() ->
          router.core().loads().load(BackendId.of(victimId)).inFlightRequests() == 0
              && router.core().loads().load(BackendId.of(survivorId)).inFlightRequests() == 0);
      assertThat(router.scrapeMetrics()).contains("kind=\"closed_mid_response\"");
    } finally {
      if (!victimClosed) {
        victim.close();
      }
    }
  }

  @Test
  void backendConfigWithCapacityIsGivenToTheIndex() throws Exception {
    try (FakeBackend a = new FakeBackend("a");
        KvrouteServer router = KvrouteServer.start(base("cache-aware", List.of())
            .withBackends(List.of(new BackendConfig(a.uri(), "gpu-0", 4096))))) {
      assertThat(router.backends()).extracting(BackendId::name).containsExactly("gpu-0");
      HttpResponse<String> r = post(router, "/v1/completions", "{\"prompt\":\"" + "word ".repeat(200) + "\"}");
      assertThat(r.headers().firstValue("x-kvroute-backend")).hasValue("gpu-0");
      assertThat(router.core().index().sizeTokens(BackendId.of("gpu-0"))).isBetween(16L, 4096L);
    }
  }
}
