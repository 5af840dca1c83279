package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.proxy.config.AdminConfig;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 11 items 2-5 over real sockets (cases C3-C8 of the 2026-12 hardening report): paths that
 * left the API, engine-control paths, the admin port's token, limits and timeouts, Host and
 * Transfer-Encoding checks, HTTP/1.0 keep-alive on the router's own responses.
 */
@ExtendWith(NettyLeakExtension.class)
final class HardeningIT {
  static final String CHAT = "{\"model\":\"fake-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2}";

  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> ENGINE = new ServerExtension<>(() -> new FakeBackend("e"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> KvrouteServer.start(
      ProxyConfig.defaults().withPort(0).withPolicy("round-robin")
          .withAdmin(new AdminConfig(0, "127.0.0.1", "s3cret", false, 4096, Duration.ofMillis(800), Duration.ofMillis(800)))
          // no probes: a busy machine must not turn the one backend unhealthy under these tests
          .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(5), 2, 1, Duration.ZERO))
          .withBackendUrls(List.of(ENGINE.get().uri()))));

  static RawHttp api() throws Exception {
    return new RawHttp(ROUTER.get().port());
  }

  static RawHttp admin() throws Exception {
    return new RawHttp(ROUTER.get().adminPort());
  }

  /** The requests the engine saw other than health probes and metrics scrapes. */
  static List<String> engineSaw() {
    return ENGINE.get().received.stream().map(r -> r.method() + " " + r.uri()).toList();
  }

  @Test
  void dotSegmentsLeftTheApiAndNowGet400WithoutReachingAnEngine() throws Exception {
    int before = engineSaw().size();
    for (String target : List.of("/v1/../metrics", "/v1/%2e%2e/metrics", "/v1/%2E%2E/sleep", "/v1/.%2e/metrics",
        "/v1/./chat/completions", "/v1\\..\\metrics", "/v1/..%2fmetrics", "/v1/..;/metrics", "//v1/../metrics",
        "/v1//../sleep", "http://x/v1/../metrics", "/v1/%252e%252e/metrics", "/v1/../metrics?x=1")) {
      try (RawHttp c = api()) {
        c.send("GET " + target + " HTTP/1.1\r\nHost: router\r\n\r\n");
        RawHttp.Response r = c.read();
        assertThat(r.status()).as(target).isEqualTo(400);
        assertThat(r.header("content-type")).as(target).isEqualTo("application/json");
        assertThat(r.bodyText()).as(target).contains("\"type\":\"BadRequestError\"").contains("\"code\":400");
        assertThat(r.header("x-kvroute-backend")).as(target).isNull();
      }
    }
    assertThat(engineSaw()).hasSize(before);
  }

  @Test
  void engineControlPathsWereReachableAndNowGet404() throws Exception {
    int before = engineSaw().size();
    try (RawHttp c = api()) {
      for (String path : List.of("/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/sleep", "/wake_up",
          "/flush_cache", "/update_weights_from_disk", "/collective_rpc", "/reset_prefix_cache", "/version",
          "/v1/Chat/completions", "/v1/chat/completions/x")) {
        c.send("POST " + path + " HTTP/1.1\r\nHost: router\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        RawHttp.Response r = c.read();
        assertThat(r.status()).as(path).isEqualTo(404);
        assertThat(r.bodyText()).as(path).contains("\"type\":\"NotFoundError\"").contains("no route for POST " + path);
        assertThat(r.header("connection")).as("the connection stays usable").isNull();
      }
    }
    assertThat(engineSaw()).hasSize(before);
    try (RawHttp c = api()) {
      for (String target : List.of("/v1/embeddings", "/tokenize", "http://elsewhere:1/v1/rerank", "/v1/ch%61t/completions")) {
        c.send("POST " + target + " HTTP/1.1\r\nHost: router\r\nContent-Type: application/json\r\nContent-Length: "
            + CHAT.length() + "\r\n\r\n" + CHAT);
        RawHttp.Response r = c.read();
        assertThat(r.status()).as(target).isEqualTo(200);
        assertThat(r.header("x-kvroute-backend")).as(target).isNotNull();
      }
    }
    assertThat(engineSaw().subList(before, engineSaw().size())).containsExactly(
        "POST /v1/embeddings", "POST /tokenize", "POST /v1/rerank", "POST /v1/chat/completions");
  }

  @Test
  void duplicatedMissingOrInvalidHostWasServedAndIsNow400() throws Exception {
    int before = engineSaw().size();
    for (String hosts : List.of("Host: a\r\nHost: b\r\n", "", "Host: a b@c\r\n", "Host: user@router\r\n", "Host:\r\n",
        "Host: [::1\r\n", "Host: router:123456\r\n")) {
      try (RawHttp c = api()) {
        c.send("POST /v1/chat/completions HTTP/1.1\r\n" + hosts + "Content-Type: application/json\r\nContent-Length: "
            + CHAT.length() + "\r\n\r\n" + CHAT);
        RawHttp.Response r = c.read();
        assertThat(r.status()).as(hosts).isEqualTo(400);
        assertThat(r.bodyText()).as(hosts).contains("Host").contains("\"code\":400");
        assertThat(r.header("connection")).isEqualTo("close");
      }
    }
    assertThat(engineSaw()).hasSize(before);
    for (String host : List.of("router", "router:8080", "[::1]:8080", "127.0.0.1")) {
      try (RawHttp c = api()) {
        c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
            + "Content-Length: " + CHAT.length() + "\r\n\r\n" + CHAT);
        assertThat(c.read().status()).as(host).isEqualTo(200);
      }
    }
  }

  @Test
  void aHeaderValueWithANulOrABareCrIsRefusedNotForwarded() throws Exception {
    // the headers sent upstream are copies that are not validated again (HeaderRewrite): the client
    // side's decoder must refuse such a value
    int before = engineSaw().size();
    for (String bad : List.of("X-Note: a\u0000b\r\n", "X-Note: a\rb\r\n")) {
      try (RawHttp c = api()) {
        c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: router\r\n" + bad + "Content-Type: application/json\r\n"
            + "Content-Length: " + CHAT.length() + "\r\n\r\n" + CHAT);
        assertThat(c.read().status()).as(bad).isEqualTo(400);
      }
    }
    assertThat(engineSaw()).hasSize(before);
  }

  @Test
  void gzipChunkedBodyWasForwardedStillCompressedAndIsNow501() throws Exception {
    ByteArrayOutputStream gz = new ByteArrayOutputStream();
    try (GZIPOutputStream z = new GZIPOutputStream(gz)) {
      z.write("{\"model\":\"fake-model\",\"input\":\"hello\"}".getBytes());
    }
    byte[] body = gz.toByteArray();
    int before = engineSaw().size();
    for (String te : List.of("gzip, chunked", "gzip\r\nTransfer-Encoding: chunked", "identity, chunked")) {
      try (RawHttp c = api()) {
        c.send("POST /v1/embeddings HTTP/1.1\r\nHost: router\r\nContent-Type: application/json\r\nTransfer-Encoding: "
            + te + "\r\n\r\n" + Integer.toHexString(body.length) + "\r\n");
        c.send(body);
        c.send("\r\n0\r\n\r\n");
        RawHttp.Response r = c.read();
        assertThat(r.status()).as(te).isEqualTo(501);
        assertThat(r.bodyText()).as(te).contains("\"type\":\"NotImplementedError\"").contains("Transfer-Encoding");
        assertThat(r.header("connection")).isEqualTo("close");
      }
    }
    for (String te : List.of("chunked, chunked", "chunked, gzip", "gzip")) {
      try (RawHttp c = api()) {
        c.send("POST /v1/embeddings HTTP/1.1\r\nHost: router\r\nTransfer-Encoding: " + te + "\r\n\r\n2\r\n{}\r\n0\r\n\r\n");
        assertThat(c.read().status()).as(te).isEqualTo(400);
      }
    }
    assertThat(engineSaw()).hasSize(before);
  }

  @Test
  void http10KeepAliveWasMissingOnTheRoutersOwnResponses() throws Exception {
    try (RawHttp c = api()) {
      for (String req : List.of("GET /health", "GET /ready", "GET /metrics", "GET /v1/models", "GET /nope",
          "POST /health", "GET /v1/../metrics", "POST /v1/chat/completions")) {
        // the dot-segment request is refused before routing and closes its connection: checked last
        if (req.contains("..")) {
          continue;
        }
        String body = req.startsWith("POST /v1") ? "{not json" : "";
        c.send(req + " HTTP/1.0\r\nConnection: keep-alive\r\n"
            + (body.isEmpty() ? "" : "Content-Length: " + body.length() + "\r\n") + "\r\n" + body);
        RawHttp.Response r = c.read();
        assertThat(r.status()).as(req).isIn(200, 400, 404, 405);
        assertThat(r.header("connection")).as(req).isEqualToIgnoringCase("keep-alive");
        assertThat(r.header("content-length")).as(req).isNotNull();
      }
    }
    try (RawHttp c = api()) {
      c.send("GET /health HTTP/1.0\r\n\r\n");
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.header("connection")).isEqualTo("close");
      assertThat(c.closedByPeer()).isTrue();
    }
    try (RawHttp c = admin()) {
      for (int i = 0; i < 2; i++) {
        c.send("GET /admin/backends HTTP/1.0\r\nConnection: keep-alive\r\nAuthorization: Bearer s3cret\r\n\r\n");
        RawHttp.Response r = c.read();
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.header("connection")).isEqualToIgnoringCase("keep-alive");
      }
    }
  }

  @Test
  void http10KeepAliveWasMissingOnTheRoutersOwnUpstreamErrors() throws Exception {
    // a backend that refuses connections: the router answers 502 itself, after its retries
    try (KvrouteServer r = KvrouteServer.start(ProxyConfig.defaults().withPort(0).withAdminPort(-1)
        .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 2, 1, Duration.ZERO))
        .withBackendUrls(List.of(URI.create("http://127.0.0.1:1"))));
        RawHttp c = new RawHttp(r.port())) {
      for (int i = 0; i < 2; i++) {
        c.send("POST /v1/chat/completions HTTP/1.0\r\nConnection: keep-alive\r\nContent-Type: application/json\r\n"
            + "Content-Length: " + CHAT.length() + "\r\n\r\n" + CHAT);
        RawHttp.Response resp = c.read();
        assertThat(resp.status()).isEqualTo(502);
        assertThat(resp.header("connection")).isEqualToIgnoringCase("keep-alive");
      }
    }
  }

  @Test
  void adminTokenWasCheckedAfterA60MiBBodyAndIsNowCheckedOnTheHead() throws Exception {
    try (RawHttp c = admin()) {
      c.send("POST /admin/backends HTTP/1.1\r\nHost: x\r\nContent-Length: 62914560\r\n\r\n");
      RawHttp.Response r = c.read(); // nothing of the body was sent: the answer comes on the head alone
      assertThat(r.status()).isEqualTo(401);
      assertThat(r.header("www-authenticate")).isEqualTo("Bearer");
      assertThat(r.bodyText()).contains("\"type\":\"AuthenticationError\"");
    }
    try (RawHttp c = admin()) {
      c.send("POST /admin/backends HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret-but-longer\r\n"
          + "Content-Length: 62914560\r\n\r\n");
      assertThat(c.read().status()).isEqualTo(401);
    }
    assertThat(ROUTER.get().backends()).hasSize(1);
  }

  @Test
  void anAdminRouteAskedWithTheWrongMethodIs405() throws Exception {
    for (String req : List.of("GET /admin/lora/load", "GET /admin/lora/unload", "POST /admin/config",
        "GET /admin/explain")) {
      try (RawHttp c = admin()) {
        c.send(req + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nContent-Length: 0\r\n\r\n");
        RawHttp.Response r = c.read();
        assertThat(r.status()).as(req).isEqualTo(405);
        assertThat(r.bodyText()).as(req).contains("expected: ");
        assertThat(r.header("allow")).as(req).isNotBlank();
      }
    }
  }

  @Test
  void adminBodiesAreLimitedAndSlowClientsTimedOut() throws Exception {
    try (RawHttp c = admin()) {
      c.send("POST /admin/explain HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nContent-Length: 5000\r\n\r\n");
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(413);
      assertThat(r.bodyText()).contains("4096");
    }
    try (RawHttp c = admin()) {
      c.send("POST /admin/explain HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nTransfer-Encoding: chunked\r\n\r\n");
      for (int i = 0; i < 5; i++) {
        c.send("400\r\n" + "x".repeat(1024) + "\r\n");
      }
      assertThat(c.read().status()).as("chunked, no length announced").isEqualTo(413);
    }
    try (RawHttp c = admin()) {
      c.send("GET /admin/backends HTTP/1.1\r\nHost: x\r\nAuthor"); // a head that never completes
      assertThat(c.closedByPeer()).as("closed after admin.idleTimeout").isTrue();
    }
    try (RawHttp c = admin()) {
      c.send("POST /admin/explain HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nContent-Length: 100\r\n\r\n{\"mess");
      RawHttp.Response r = c.read();
      assertThat(r.status()).as("body incomplete after admin.readTimeout").isEqualTo(408);
    }
    try (RawHttp c = admin()) {
      c.send("GET /admin/backends/../config HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n\r\n");
      assertThat(c.read().status()).as("the admin port refuses dot-segments too").isEqualTo(400);
    }
  }

  @Test
  void insecureNoTokenStartsOnAllInterfacesWhenAskedFor() throws Exception {
    try (KvrouteServer r = KvrouteServer.start(ProxyConfig.defaults().withPort(0).withBackendUrls(List.of(ENGINE.get().uri()))
        .withAdmin(new AdminConfig(0, "0.0.0.0", null, true, 4096, Duration.ofSeconds(5), Duration.ofSeconds(5))))) {
      URI admin = r.adminUri();
      try (RawHttp c = new RawHttp(admin.getPort())) {
        c.send("GET /admin/backends HTTP/1.1\r\nHost: x\r\n\r\n");
        assertThat(c.read().status()).isEqualTo(200);
      }
    }
  }
}
