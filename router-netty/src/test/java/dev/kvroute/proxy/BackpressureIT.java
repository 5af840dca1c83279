package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.WriteBufferConfig;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Backpressure end to end: a client that stops reading stops the proxy from reading the backend, so
 * the backend stalls after what the sockets and the stated write-buffer water marks hold, instead of
 * the proxy buffering the whole response.
 */
@ExtendWith(NettyLeakExtension.class)
final class BackpressureIT {
  static final long BODY_BYTES = 64L << 20;

  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> BACKEND = new ServerExtension<>(() -> new FakeBackend("bulk"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> KvrouteServer.start(
      ProxyConfig.defaults().withPort(0).withAdminPort(-1)
          .withWriteBuffer(new WriteBufferConfig(32 << 10, 64 << 10))
          .withBackendUrls(List.of(BACKEND.get().uri()))));

  @Test
  void slowClientStallsTheBackendAndThenGetsEveryByte() throws Exception {
    try (Socket s = new Socket()) {
      s.setReceiveBufferSize(64 << 10);
      s.connect(new java.net.InetSocketAddress("127.0.0.1", ROUTER.get().port()));
      s.setSoTimeout(20_000);
      String body = "{\"input\":\"bulk\"}";
      s.getOutputStream().write(("POST /v1/embeddings HTTP/1.1\r\nHost: r\r\nx-fake: bulk=" + BODY_BYTES + "\r\nContent-Length: "
          + body.length() + "\r\n\r\n" + body).getBytes(StandardCharsets.US_ASCII));
      s.getOutputStream().flush();

      // not reading: the backend must stall well before the end of the body
      await().atMost(Duration.ofSeconds(10)).until(() -> BACKEND.get().bulkWritten.get() > 0);
      long stalled = awaitStall();
      assertThat(stalled).as("bytes the backend could write while the client read nothing").isLessThan(24L << 20);

      // now read everything: the whole body arrives, intact and in order
      InputStream in = s.getInputStream();
      RawHttp raw = new RawHttp(in);
      RawHttp.Response r = raw.read();
      assertThat(r.status()).isEqualTo(200);
      assertThat((long) r.body().length).isEqualTo(BODY_BYTES);
      for (int i = 0; i < r.body().length; i += 4099) {
        assertThat(r.body()[i]).isEqualTo((byte) ('0' + (i % (16 << 10)) % 10));
      }
    }
  }

  /** Waits until the backend's written count stops growing for 500 ms and returns it. */
  private static long awaitStall() {
    long[] last = {-1};
    long[] since = {System.nanoTime()};
    await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100)).until(() -> {
      long now = BACKEND.get().bulkWritten.get();
      if (now != last[0]) {
        last[0] = now;
        since[0] = System.nanoTime();
        return false;
      }
      return System.nanoTime() - since[0] > 500_000_000L;
    });
    return last[0];
  }
}
