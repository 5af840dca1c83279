package dev.kvroute.bench.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The Netty floor relays whole requests and replies, in turn over its backends, in order, and 502s. */
class NettyRelayTest {
  private final List<HttpServer> backends = new ArrayList<>();
  private NettyRelay relay;

  @AfterEach
  void stop() {
    if (relay != null) {
      relay.close();
    }
    backends.forEach(b -> b.stop(0));
  }

  /** A backend that answers every POST with its name and the body's length, and every GET with its name. */
  private InetSocketAddress backend(String name) throws IOException {
    HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    s.createContext("/", ex -> {
      byte[] body = ex.getRequestBody().readAllBytes();
      byte[] reply = (name + " " + ex.getRequestMethod() + " " + ex.getRequestURI() + " " + body.length)
          .getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().add("content-type", "text/plain");
      ex.sendResponseHeaders(200, reply.length);
      ex.getResponseBody().write(reply);
      ex.close();
    });
    s.start();
    backends.add(s);
    return s.getAddress();
  }

  /** Writes {@code requests} at once on one connection and reads {@code count} replies' bodies. */
  private static List<String> exchange(int port, String requests, int count) throws IOException {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(requests.getBytes(StandardCharsets.UTF_8));
      InputStream in = s.getInputStream();
      List<String> bodies = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        bodies.add(readReply(in));
      }
      return bodies;
    }
  }

  /** One reply: its status line's code and its body, "CODE body". */
  private static String readReply(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      int c = in.read();
      assertThat(c).as("reply head: " + head).isNotNegative();
      head.write(c);
    }
    String h = head.toString(StandardCharsets.ISO_8859_1);
    int length = 0;
    for (String line : h.split("\r\n")) {
      if (line.toLowerCase().startsWith("content-length:")) {
        length = Integer.parseInt(line.substring(15).trim());
      }
    }
    byte[] body = in.readNBytes(length);
    return h.substring(9, 12) + " " + new String(body, StandardCharsets.UTF_8);
  }

  private static String post(String path, int bodyBytes) {
    return "POST " + path + " HTTP/1.1\r\nhost: relay\r\ncontent-type: application/json\r\ncontent-length: "
        + bodyBytes + "\r\n\r\n" + "x".repeat(bodyBytes);
  }

  @Test
  void relaysWholeBodiesToTheBackendsInTurnAndAnswersPipelinedRequestsInOrder() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(backend("a"), backend("b")), 1);

    List<String> replies = exchange(relay.port(),
        post("/v1/chat/completions", 22_000) + post("/one", 5) + "GET /two HTTP/1.1\r\nhost: relay\r\n\r\n", 3);

    assertThat(replies).containsExactly(
        "200 a POST /v1/chat/completions 22000", "200 b POST /one 5", "200 a GET /two 0");
  }

  @Test
  void answers502ForABackendThatCannotBeReachedAndGoesOnWithTheNext() throws IOException {
    int closed;
    try (ServerSocket s = new ServerSocket(0)) {
      closed = s.getLocalPort(); // nothing listens there once closed
    }
    relay = NettyRelay.start("127.0.0.1", 0, List.of(new InetSocketAddress("127.0.0.1", closed), backend("b")), 1);

    List<String> replies = exchange(relay.port(), post("/x", 3) + post("/y", 4), 2);

    assertThat(replies).containsExactly("502 ", "200 b POST /y 4");
  }

  @Test
  void answersTheRequestsBeforeAMalformedOneThen400AndCloses() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(backend("a")), 1);
    try (Socket s = new Socket("127.0.0.1", relay.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write((post("/ok", 7) + "POST /bad HTTP/1.1\r\ncontent-length: x\r\n\r\n" + post("/after", 1))
          .getBytes(StandardCharsets.UTF_8));
      InputStream in = s.getInputStream();

      assertThat(readReply(in)).isEqualTo("200 a POST /ok 7");
      assertThat(readReply(in)).isEqualTo("400 ");
      assertThat(in.read()).as("end of stream after the 400").isEqualTo(-1);
    }
  }

  @Test
  void closesTheConnectionAfterARequestThatAsksForIt() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(backend("a")), 1);
    try (Socket s = new Socket("127.0.0.1", relay.port())) {
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      out.write("GET /z HTTP/1.1\r\nhost: relay\r\nconnection: close\r\n\r\n".getBytes(StandardCharsets.UTF_8));
      InputStream in = s.getInputStream();

      assertThat(readReply(in)).isEqualTo("200 a GET /z 0");
      assertThat(in.read()).as("end of stream after the reply").isEqualTo(-1);
    }
  }
}
