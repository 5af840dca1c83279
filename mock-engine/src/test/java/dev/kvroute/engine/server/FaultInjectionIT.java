package dev.kvroute.engine.server;

import static dev.kvroute.engine.server.Http.json;
import static dev.kvroute.engine.server.Http.metric;
import static dev.kvroute.engine.server.MockEngineServerIT.chat;
import static dev.kvroute.engine.server.MockEngineServerIT.engine;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every fault mode of {@link FaultPlan} and {@link HealthFault}, through real sockets. */
class FaultInjectionIT {
  static final String PATH = "/v1/chat/completions";
  MockEngineServer server;

  @BeforeEach
  void start() {
    server = MockEngineServer.start(MockEngineOptions.builder().engine(engine().build()).timeScale(100).build());
  }

  @AfterEach
  void close() {
    server.close();
  }

  double aborts() throws Exception {
    return metric(Http.get(server.url() + "/metrics").body(), "vllm:request_success_total", "finished_reason=\"abort\"");
  }

  @Test
  void statusFaultAnswersAnOpenAiErrorWithoutEngineWork() throws Exception {
    HttpResponse<String> r = Http.post(server.url() + PATH, chat("x", 3, ""), "X-Mock-Fault", "status:503");
    assertThat(r.statusCode()).isEqualTo(503);
    JsonNode e = json(r.body()).get("error");
    assertThat(e.get("code").asInt()).isEqualTo(503);
    assertThat(e.get("message").asText()).isEqualTo("mock fault: status 503");
    assertThat(server.stats().promptTokens()).isZero();
  }

  @Test
  void closeBeforeHeadersClosesWithoutAnswering() throws Exception {
    try (Http.Conn c = new Http.Conn(server.url(), 5_000)) {
      c.send("POST", PATH, chat("x", 3, ""), "X-Mock-Fault", "close-before-headers");
      Http.Raw r = c.read(10);
      assertThat(r.eof).isTrue();
      assertThat(r.status).isEqualTo(-1);
    }
  }

  @Test
  void closeAfterKStreamingEventsCutsTheStreamAndAbortsTheRequest() throws Exception {
    try (Http.Conn c = new Http.Conn(server.url(), 5_000)) {
      c.send("POST", PATH, chat("x", 50, ",\"stream\":true"), "X-Mock-Fault", "close-after:3");
      Http.Raw r = c.read(100);
      assertThat(r.status).isEqualTo(200);
      assertThat(r.chunks).hasSize(3);
      assertThat(r.eof).isTrue();
      assertThat(r.terminated).isFalse();
      assertThat(r.body()).doesNotContain("[DONE]");
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> aborts() == 1.0);
    assertThat(server.stats().usedBlocks()).isZero();
  }

  @Test
  void closeAfterKBytesCutsANonStreamingBody() throws Exception {
    try (Http.Conn c = new Http.Conn(server.url(), 5_000)) {
      c.send("POST", PATH, chat("x", 5, ""), "X-Mock-Fault", "close-after:10");
      Http.Raw r = c.read(1);
      assertThat(r.status).isEqualTo(200);
      assertThat(Integer.parseInt(r.headers.get("content-length"))).isGreaterThan(10);
      assertThat(r.chunks.get(0)).hasSize(10);
      assertThat(r.eof).isTrue();
    }
  }

  @Test
  void stallNeverAnswersAndLeavesTheEngineIdle() throws Exception {
    try (Http.Conn c = new Http.Conn(server.url(), 300)) {
      c.send("POST", PATH, chat("x", 5, ",\"stream\":true"), "X-Mock-Fault", "stall");
      Http.Raw r = c.read(1);
      assertThat(r.timedOut).isTrue();
      assertThat(r.status).isEqualTo(-1);
    }
    assertThat(server.stats().promptTokens()).isZero();
  }

  @Test
  void stallAfterKEventsKeepsTheConnectionOpenAndAbortsTheRequest() throws Exception {
    try (Http.Conn c = new Http.Conn(server.url(), 500)) {
      c.send("POST", PATH, chat("x", 50, ",\"stream\":true"), "X-Mock-Fault", "stall-after:2");
      Http.Raw r = c.read(100);
      assertThat(r.status).isEqualTo(200);
      assertThat(r.chunks).hasSize(2);
      assertThat(r.timedOut).isTrue();
      await().atMost(Duration.ofSeconds(10)).until(() -> aborts() == 1.0);
      assertThat(c.closedByPeer()).isFalse();
    }
  }

  @Test
  void splitWritesEachEventInPiecesCutInsideAUtf8Character() throws Exception {
    try (Http.Conn c = new Http.Conn(server.url(), 5_000)) {
      c.send("POST", PATH, chat("x", 4, ",\"stream\":true,\"stream_options\":{}"), "X-Mock-Fault", "split");
      Http.Raw r = c.read(1000);
      assertThat(r.terminated).isTrue();
      // 7 events (role, 4 tokens, usage, [DONE]), each in 3 or 4 pieces.
      assertThat(r.chunks.size()).isGreaterThanOrEqualTo(21);
      assertThat(r.chunks.stream().filter(b -> b.length == 1 && b[0] == 'd')).hasSize(7);
      assertThat(r.chunks.stream().filter(b -> b.length == 1 && b[0] == '\n')).hasSize(7);
      // Four content events are cut after the first byte of "é" (0xC3 0xA9).
      assertThat(r.chunks.stream().filter(b -> b.length > 0 && (b[b.length - 1] & 0xFF) == 0xC3)).hasSize(4);
      List<String> ev = Http.events(r.body());
      assertThat(ev).hasSize(7);
      for (int i = 1; i <= 4; i++) {
        assertThat(json(ev.get(i)).get("choices").get(0).get("delta").get("content").asText()).endsWith("\u00e9");
      }
      assertThat(json(ev.get(5)).get("usage").get("completion_tokens").asInt()).isEqualTo(4);
      assertThat(new String(r.chunks.get(r.chunks.size() - 1), StandardCharsets.UTF_8)).isEqualTo("\n");
    }
  }

  @Test
  void defaultFaultAppliesToRequestsWithoutHeaderAndNoneOverridesIt() throws Exception {
    server.faults().setRequests(FaultPlan.parse("status:500"));
    assertThat(Http.post(server.url() + PATH, chat("x", 1, "")).statusCode()).isEqualTo(500);
    assertThat(Http.post(server.url() + PATH, chat("x", 1, ""), "X-Mock-Fault", "none").statusCode()).isEqualTo(200);
    server.faults().setProbability(0);
    assertThat(Http.post(server.url() + PATH, chat("x", 1, "")).statusCode()).isEqualTo(200);
  }

  @Test
  void healthFaultsFromCodeAndOverHttp() throws Exception {
    assertThat(Http.get(server.url() + "/health").statusCode()).isEqualTo(200);
    server.faults().setHealth(HealthFault.parse("fail"));
    assertThat(Http.get(server.url() + "/health").statusCode()).isEqualTo(503);
    assertThat(Http.post(server.url() + PATH, chat("x", 1, "")).statusCode()).isEqualTo(200);

    server.faults().setHealth(HealthFault.parse("dead"));
    assertThat(Http.get(server.url() + "/health").statusCode()).isEqualTo(503);
    HttpResponse<String> dead = Http.post(server.url() + PATH, chat("x", 1, ""));
    assertThat(dead.statusCode()).isEqualTo(500);
    assertThat(json(dead.body()).get("error").get("type").asText()).isEqualTo("InternalServerError");

    HttpResponse<String> put = Http.CLIENT.send(java.net.http.HttpRequest.newBuilder(
            java.net.URI.create(server.url() + "/mock/faults"))
        .PUT(java.net.http.HttpRequest.BodyPublishers.ofString("{\"health\":\"slow:150\"}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(json(put.body()).get("health").asText()).isEqualTo("slow:150");
    assertThat(Http.get(server.url() + "/health").statusCode()).isEqualTo(200);
    assertThat(Http.post(server.url() + PATH, chat("x", 1, "")).statusCode()).isEqualTo(200);

    assertThat(Http.CLIENT.send(java.net.http.HttpRequest.newBuilder(
            java.net.URI.create(server.url() + "/health")).header("X-Mock-Fault", "status:500").build(),
        HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(500);
    assertThat(Http.post(server.url() + "/mock/faults", "{\"health\":\"bogus\"}").statusCode()).isEqualTo(400);
  }

  @Test
  void slowHealthAnswersAfterItsDelay() throws Exception {
    server.faults().setHealth(HealthFault.parse("slow:300"));
    try (Http.Conn c = new Http.Conn(server.url(), 100)) {
      c.send("GET", "/health", null);
      assertThat(c.read(1).timedOut).isTrue();
    }
    assertThat(Http.get(server.url() + "/health").statusCode()).isEqualTo(200);
  }

  @Test
  void unknownFaultHeaderIsABadRequest() throws Exception {
    HttpResponse<String> r = Http.post(server.url() + PATH, chat("x", 1, ""), "X-Mock-Fault", "explode");
    assertThat(r.statusCode()).isEqualTo(400);
    assertThat(json(r.body()).get("error").get("message").asText()).contains("explode");
  }
}
