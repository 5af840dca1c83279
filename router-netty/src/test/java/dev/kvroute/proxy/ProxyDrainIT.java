package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.RoutingConfig;
import java.net.ConnectException;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The graceful shutdown ({@link KvrouteServer#drain}): new connections are refused, idle ones are
 * closed, a stream in progress is relayed to its end with {@code Connection: close}, and what
 * outlasts the limit is ended by {@link KvrouteServer#close()} with an error its client can read.
 */
@ExtendWith(NettyLeakExtension.class)
final class ProxyDrainIT {
  private static String streamRequest(String fake) {
    String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";
    return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-fake: " + fake
        + "\r\nContent-Length: " + body.length() + "\r\n\r\n" + body;
  }

  /** Starts {@code router}'s drain (20 s limit) on another thread. */
  private static CompletableFuture<Boolean> drainAsync(KvrouteServer router) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return router.drain(Duration.ofSeconds(20));
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
  }

  @Test
  void aStreamInProgressEndsNormallyWhileNewConnectionsAreRefused() throws Exception {
    try (FakeBackend backend = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(ProxyFailureIT.base("round-robin", List.of(backend.uri())));
        RawHttp idle = new RawHttp(router.port());
        RawHttp streaming = new RawHttp(router.port())) {
      int port = router.port();
      idle.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
      assertThat(idle.read().status()).isEqualTo(200);
      // the backend answers after the drain has started, so the response head can say so
      streaming.send(streamRequest("delay-ms=700;events=12;interval-ms=50"));
      await().atMost(5, TimeUnit.SECONDS).until(() -> backend.received.size() == 1);

      CompletableFuture<Boolean> drained = drainAsync(router);

      await().atMost(5, TimeUnit.SECONDS).untilAsserted(() ->
          assertThatThrownBy(() -> new Socket("127.0.0.1", port).close()).isInstanceOf(ConnectException.class));
      assertThat(idle.closedByPeer()).as("an idle keep-alive connection is closed at once").isTrue();
      assertThat(drained).as("still relaying the stream").isNotDone();

      RawHttp.Response r = streaming.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.header("connection")).isEqualToIgnoringCase("close");
      assertThat(r.bodyText()).contains("[DONE]");
      assertThat(r.bodyText().split("data: ", -1)).hasSizeGreaterThanOrEqualTo(12);
      assertThat(streaming.closedByPeer()).as("closed after its response").isTrue();
      assertThat(drained.get(10, TimeUnit.SECONDS)).isTrue();
      assertThat(backend.abortedStreams).hasValue(0);
    }
  }

  @Test
  void aRequestStillUploadingIsServedThenItsConnectionCloses() throws Exception {
    try (FakeBackend backend = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(ProxyFailureIT.base("round-robin", List.of(backend.uri())));
        RawHttp uploading = new RawHttp(router.port())) {
      String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"" + "x".repeat(2_000) + "\"}]}";
      // Expect: 100-continue tells when the router has read the head, so the drain surely meets the
      // request half-uploaded
      String head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Expect: 100-continue\r\nContent-Length: " + body.length() + "\r\n\r\n";
      uploading.send(head);
      assertThat(uploading.read().status()).isEqualTo(100);
      uploading.send(body.substring(0, 100));
      CompletableFuture<Boolean> drained = drainAsync(router);
      // the rest of the body arrives after the drain began
      await().atMost(5, TimeUnit.SECONDS).untilAsserted(() ->
          assertThatThrownBy(() -> new Socket("127.0.0.1", router.port()).close()).isInstanceOf(ConnectException.class));
      uploading.send(body.substring(100));
      RawHttp.Response r = uploading.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat(r.header("connection")).isEqualToIgnoringCase("close");
      assertThat(uploading.closedByPeer()).isTrue();
      assertThat(drained.get(10, TimeUnit.SECONDS)).isTrue();
    }
  }

  @Test
  void aStreamThatOutlastsTheDrainEndsWithAnErrorEventAtClose() throws Exception {
    try (FakeBackend backend = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(ProxyFailureIT.base("round-robin", List.of(backend.uri())));
        RawHttp streaming = new RawHttp(router.port())) {
      streaming.send(streamRequest("events=200;interval-ms=100"));
      await().atMost(5, TimeUnit.SECONDS).until(() -> backend.received.size() == 1);

      assertThat(router.drain(Duration.ofMillis(300))).isFalse();
      assertThat(router.openClientConnections()).isEqualTo(1);
      router.close();
      // the stream is cut, not left to time out, and says why as vLLM's mid-stream errors do
      RawHttp.Response r = streaming.read();
      assertThat(r.status()).isEqualTo(200);
      String body = r.bodyText();
      assertThat(body.split("data: ", -1).length).as("some events relayed first").isBetween(2, 100);
      assertThat(body).contains("data: {\"error\":").contains("the router is shutting down")
          .contains("\"code\":503").endsWith("data: [DONE]\n\n");
      assertThat(streaming.closedByPeer()).isTrue();
      await().atMost(5, TimeUnit.SECONDS).until(() -> backend.abortedStreams.get() == 1);
    }
  }

  @Test
  void aStreamCutInsideAnEventGetsOnlyWholeEventsBeforeTheErrorEvent() throws Exception {
    try (FakeBackend backend = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(ProxyFailureIT.base("round-robin", List.of(backend.uri())));
        RawHttp streaming = new RawHttp(router.port());
        RawHttp http10 = new RawHttp(router.port())) {
      streaming.send(streamRequest("partial-after=2"));
      // HTTP/1.0: no chunked framing, the body ends with the close; the error event still comes first
      http10.send(streamRequest("events=200;interval-ms=50").replace("HTTP/1.1", "HTTP/1.0"));
      await().atMost(5, TimeUnit.SECONDS).until(() -> backend.received.size() == 2);
      await().atMost(5, TimeUnit.SECONDS).until(() -> backend.partialsWritten.get() == 1);
      // the router reads the half event during the drain's 100 ms

      assertThat(router.drain(Duration.ofMillis(100))).isFalse();
      router.close();
      String body = streaming.read().bodyText();
      List<String> events = List.of(body.split("\n\n"));
      assertThat(events).hasSize(4);
      assertThat(events.subList(0, 2)).allSatisfy(e -> assertThat(e).startsWith("data: {").endsWith("}"));
      assertThat(events.get(2)).startsWith("data: {\"error\":").contains("shutting down").doesNotContain("chat.compl");
      assertThat(events.get(3)).isEqualTo("data: [DONE]");

      RawHttp.Response r10 = http10.read();
      assertThat(r10.status()).isEqualTo(200);
      assertThat(r10.bodyText()).contains("data: {\"error\":").endsWith("data: [DONE]\n\n");
      assertThat(http10.closedByPeer()).isTrue();
    }
  }

  @Test
  void aRequestStillUploadingWhenTheRouterClosesGetsA503() throws Exception {
    try (FakeBackend backend = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(ProxyFailureIT.base("round-robin", List.of(backend.uri())));
        RawHttp uploading = new RawHttp(router.port())) {
      // Expect: 100-continue tells when the router has read the head
      uploading.send("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
          + "Expect: 100-continue\r\nContent-Length: 100\r\n\r\n");
      assertThat(uploading.read().status()).isEqualTo(100);
      uploading.send("{\"messages\":");
      assertThat(router.drain(Duration.ofMillis(200))).isFalse();
      router.close();
      RawHttp.Response r = uploading.read();
      assertThat(r.status()).isEqualTo(503);
      assertThat(r.bodyText()).contains("the router is shutting down");
      assertThat(uploading.closedByPeer()).isTrue();
      assertThat(backend.received).isEmpty();
    }
  }

  @Test
  void aRequestNotAnsweredWhenTheRouterClosesGetsA503() throws Exception {
    try (FakeBackend backend = new FakeBackend("b");
        KvrouteServer router = KvrouteServer.start(ProxyFailureIT.base("round-robin", List.of(backend.uri())));
        RawHttp waiting = new RawHttp(router.port())) {
      waiting.send(streamRequest("stall"));
      await().atMost(5, TimeUnit.SECONDS).until(() -> backend.received.size() == 1);

      assertThat(router.drain(Duration.ofMillis(200))).isFalse();
      router.close();
      RawHttp.Response r = waiting.read();
      assertThat(r.status()).isEqualTo(503);
      assertThat(r.header("connection")).isEqualToIgnoringCase("close");
      assertThat(r.bodyText()).contains("\"type\":").contains("the router is shutting down");
      assertThat(waiting.closedByPeer()).isTrue();
      assertThat(router.scrapeMetrics()).contains("outcome=\"unavailable\"");
    }
  }

  @Test
  void aRequestTheEngineIsTokenizingWhenTheRouterClosesGetsA503WithItsRequestId() throws Exception {
    try (FakeBackend engine = new FakeBackend("e");
        KvrouteServer router = KvrouteServer.start(ProxyConfig.defaults().withPort(0).withAdminPort(-1)
            .withPolicy("cache-aware")
            .withRouting(new RoutingConfig("x-session-id", "user", "engine", 16, 524_288, java.util.Map.of(),
                Duration.ofSeconds(30), 0))
            .withBackendUrls(List.of(engine.uri())));
        RawHttp waiting = new RawHttp(router.port())) {
      engine.forcedDirectives.set("stall"); // /tokenize never answers: the request stays off the loop
      String body = "{\"model\":\"" + FakeBackend.DEFAULT_MODEL + "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
      waiting.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\n"
          + "X-Request-Id: req-off-loop-7\r\nContent-Length: " + body.length() + "\r\n\r\n" + body);
      await().atMost(5, TimeUnit.SECONDS).until(() -> engine.received.stream().anyMatch(r -> r.uri().equals("/tokenize")));

      router.close();
      RawHttp.Response r = waiting.read();
      assertThat(r.status()).isEqualTo(503);
      assertThat(r.header("x-request-id")).isEqualTo("req-off-loop-7");
      assertThat(r.bodyText()).contains("the router is shutting down");
      assertThat(waiting.closedByPeer()).isTrue();
      assertThat(engine.received).noneMatch(q -> q.uri().startsWith("/v1/"));
    }
  }
}
