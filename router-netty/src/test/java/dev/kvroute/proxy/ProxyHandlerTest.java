package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.LimitConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpServerCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link ProxyHandler} on an {@link EmbeddedChannel} (codec, aggregator, handler, as {@link
 * ProxyInitializer} builds them): the paths it answers without a backend request. Its context is a
 * real router's (one fake backend, for {@code /ready} and {@code /v1/models}); the requests under test
 * never touch a socket. {@code ProxyHttpIT} covers the same paths through real sockets.
 */
final class ProxyHandlerTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int MAX_BODY = 1024;

  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> BACKEND = new ServerExtension<>(() -> new FakeBackend("a", "model-a"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> KvrouteServer.start(
      ProxyConfig.defaults()
          .withPort(0)
          .withAdminPort(-1)
          .withLimits(new LimitConfig(MAX_BODY, 4096, 2048))
          .withHealthCheck(new HealthCheckConfig(true, "/health", Duration.ofMillis(200), Duration.ofSeconds(2), 1, 1,
              Duration.ZERO))
          .withBackendUrls(List.of(BACKEND.get().uri()))));

  private final EmbeddedChannel ch = new EmbeddedChannel(
      new HttpServerCodec(),
      new RequestAggregator(MAX_BODY),
      new ProxyHandler(ROUTER.get().context()));

  /** A response read back from the channel's outbound bytes. */
  private record Reply(int status, String head, String body) {
    JsonNode json() throws Exception {
      return JSON.readTree(body);
    }
  }

  @AfterEach
  void finish() {
    ch.finishAndReleaseAll();
  }

  private Reply exchange(String request) {
    ch.writeInbound(Unpooled.copiedBuffer(request, StandardCharsets.UTF_8));
    ch.runPendingTasks();
    StringBuilder sb = new StringBuilder();
    ByteBuf b;
    while ((b = ch.readOutbound()) != null) {
      sb.append(b.toString(StandardCharsets.UTF_8));
      b.release();
    }
    String out = sb.toString();
    assertThat(out).as("a response to %s", request.lines().findFirst().orElse("")).startsWith("HTTP/1.1 ");
    int split = out.indexOf("\r\n\r\n");
    return new Reply(Integer.parseInt(out.substring(9, 12)), out.substring(0, split), out.substring(split + 4));
  }

  private static String post(String path, String body) {
    return "POST " + path + " HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\nContent-Length: "
        + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
  }

  @Test
  void healthIsAnsweredByTheHandlerItself() throws Exception {
    Reply r = exchange("GET /health HTTP/1.1\r\nHost: r\r\n\r\n");
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.json().get("status").asText()).isEqualTo("ok");
    // keep-alive: the next request on the same connection is served too
    assertThat(exchange("HEAD /health HTTP/1.1\r\nHost: r\r\n\r\n").status()).isEqualTo(200);
    assertThat(ch.isOpen()).isTrue();
  }

  @Test
  void readyOnceABackendIsHealthy() throws Exception {
    await().atMost(Duration.ofSeconds(20)).until(() -> ROUTER.get().context().backends().anyHealthy());
    Reply r = exchange("GET /ready HTTP/1.1\r\nHost: r\r\n\r\n");
    assertThat(r.status()).isEqualTo(200);
    assertThat(r.json().get("status").asText()).isEqualTo("ready");
  }

  @Test
  void aLocalPathWithAnotherMethodIs405WithAllow() {
    Reply r = exchange(post("/health", "{}"));
    assertThat(r.status()).isEqualTo(405);
    assertThat(r.head().toLowerCase()).contains("allow: get, head");
  }

  @Test
  void badJsonIsAnOpenAiStyle400() throws Exception {
    Reply r = exchange(post("/v1/chat/completions", "{\"messages\": ["));
    assertThat(r.status()).isEqualTo(400);
    assertThat(r.json().get("error").get("message").asText()).isNotBlank();
    assertThat(r.json().get("error").get("type").asText()).isEqualTo("BadRequestError");
  }

  @Test
  void aBodyOverTheLimitIs413AndTheConnectionCloses() throws Exception {
    Reply r = exchange(post("/v1/completions", "{\"prompt\":\"" + "x".repeat(MAX_BODY) + "\"}"));
    assertThat(r.status()).isEqualTo(413);
    assertThat(r.json().get("error").get("message").asText()).isNotBlank();
    ch.runPendingTasks();
    assertThat(ch.isOpen()).isFalse();
  }

  @Test
  void anUnknownPathIs404WithoutABackendRequest() throws Exception {
    int before = BACKEND.get().received.size();
    Reply r = exchange("GET /nothing/here HTTP/1.1\r\nHost: r\r\n\r\n");
    assertThat(r.status()).isEqualTo(404);
    assertThat(r.json().get("error")).isNotNull();
    assertThat(BACKEND.get().received).hasSize(before);
  }

  @Test
  void modelsIsTheUnionOfTheBackendsCards() throws Exception {
    await().atMost(Duration.ofSeconds(20))
        .until(() -> ROUTER.get().context().models().union(ROUTER.get().context().backends().routable(java.util.Set.of()))
            != null);
    Reply r = exchange("GET /v1/models HTTP/1.1\r\nHost: r\r\n\r\n");
    assertThat(r.status()).isEqualTo(200);
    JsonNode list = r.json();
    assertThat(list.get("object").asText()).isEqualTo("list");
    assertThat(list.get("data")).isNotEmpty();
    assertThat(list.get("data").findValuesAsText("id")).contains("model-a");
    assertThat(list.get("data").get(0).get("object").asText()).isEqualTo("model");
  }
}
