package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.core.BackendId;
import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.TimeoutConfig;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code timeouts.client}: connections that send no complete request (idle keep-alive, a head or a
 * body that never finishes) and clients that stop reading their response are closed, and what they
 * held (the lease, the upstream request) is released.
 */
@ExtendWith(NettyLeakExtension.class)
final class ClientTimeoutIT {
  static final Duration CLIENT_TIMEOUT = Duration.ofMillis(500);

  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> BACKEND = new ServerExtension<>(() -> new FakeBackend("slow-reader"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> KvrouteServer.start(
      ProxyConfig.defaults().withPort(0).withAdminPort(-1)
          .withTimeouts(new TimeoutConfig(Duration.ofSeconds(1), Duration.ofSeconds(5), Duration.ofSeconds(5), CLIENT_TIMEOUT))
          .withBackendUrls(List.of(BACKEND.get().uri()))));

  @Test
  void idleKeepAliveConnectionIsClosedAfterTheClientTimeout() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("GET /health HTTP/1.1\r\nHost: r\r\n\r\n");
      assertThat(c.read().status()).isEqualTo(200);
      assertThat(readsEof(c)).as("idle keep-alive connection closed").isTrue();
    }
  }

  @Test
  void connectionThatNeverFinishesItsHeadIsClosed() throws Exception {
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nX-Slow: ");
      assertThat(readsEof(c)).as("slow-header connection closed").isTrue();
    }
  }

  @Test
  void bodyThatNeverFinishesIsAnswered408() throws Exception {
    int receivedBefore = BACKEND.get().received.size();
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      c.send("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nContent-Type: application/json\r\n"
          + "Content-Length: 100\r\n\r\n{\"messages\":");
      RawHttp.Response r = c.read();
      assertThat(r.status()).isEqualTo(408);
      assertThat(r.header("content-type")).isEqualTo("application/json");
      assertThat(r.bodyText()).contains("\"type\":\"RequestTimeoutError\"").contains("\"code\":408");
      assertThat(r.header("connection")).isEqualTo("close");
    }
    assertThat(BACKEND.get().received).hasSize(receivedBefore);
  }

  @Test
  void clientThatStopsReadingIsDisconnectedAndItsLeaseAndUpstreamReleased() throws Exception {
    int closedBefore = BACKEND.get().connectionsClosed.get();
    try (Socket s = new Socket()) {
      s.setReceiveBufferSize(4 << 10);
      s.connect(new InetSocketAddress("127.0.0.1", ROUTER.get().port()));
      String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"never read\"}],\"stream\":true}";
      s.getOutputStream().write(("POST /v1/chat/completions HTTP/1.1\r\nHost: r\r\nx-fake: bulk=" + (4L << 30) + "\r\n"
          + "Content-Length: " + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
      s.getOutputStream().flush();
      BackendId id = ROUTER.get().backends().get(0);
      await().atMost(Duration.ofSeconds(5)).until(() -> BACKEND.get().bulkWritten.get() > 0);
      // the client reads nothing: once the sockets are full the router gives up on it and aborts upstream
      await().atMost(Duration.ofSeconds(20)).until(() -> BACKEND.get().connectionsClosed.get() > closedBefore);
      await().atMost(Duration.ofSeconds(2)).until(() -> ROUTER.get().core().loads().load(id).inFlightRequests() == 0);
      assertThat(ROUTER.get().scrapeMetrics()).contains("outcome=\"cancelled\"");
    }
  }

  /** Whether the router closes the connection within 5 s (a read timeout is not a close). */
  private static boolean readsEof(RawHttp c) throws java.io.IOException {
    c.socket.setSoTimeout(5_000);
    try {
      return c.in().read() < 0;
    } catch (java.net.SocketTimeoutException e) {
      return false;
    }
  }
}
