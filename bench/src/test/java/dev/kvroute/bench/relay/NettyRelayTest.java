package dev.kvroute.bench.relay;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The Netty floor relays whole requests and replies, in turn over its backends, in order, and 502s. */
class NettyRelayTest {
  private final List<HttpServer> backends = new ArrayList<>();
  private final List<ServerSocket> rawBackends = new ArrayList<>();
  private NettyRelay relay;

  @AfterEach
  void stop() throws IOException {
    if (relay != null) {
      relay.close();
    }
    backends.forEach(b -> b.stop(0));
    for (ServerSocket s : rawBackends) {
      s.close();
    }
  }

  /**
   * A backend that writes {@code reply.apply(requestHead)} (raw bytes, so anything an HTTP server
   * might send) for each bodyless request it reads, and closes the connection after a reply that
   * says {@code connection: close}.
   */
  private InetSocketAddress rawBackend(UnaryOperator<String> reply) throws IOException {
    ServerSocket server = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress());
    rawBackends.add(server);
    Thread t = new Thread(() -> {
      while (!server.isClosed()) {
        try (Socket c = server.accept()) {
          InputStream in = c.getInputStream();
          while (true) {
            StringBuilder head = new StringBuilder();
            int b;
            while (!head.toString().endsWith("\r\n\r\n") && (b = in.read()) >= 0) {
              head.append((char) b);
            }
            if (!head.toString().endsWith("\r\n\r\n")) {
              break;
            }
            String r = reply.apply(head.toString());
            c.getOutputStream().write(r.getBytes(StandardCharsets.ISO_8859_1));
            c.getOutputStream().flush();
            if (r.toLowerCase().contains("connection: close")) {
              break;
            }
          }
        } catch (IOException e) {
          // the test closed the server, or the relay the connection: wait for the next one
        }
      }
    }, "raw-backend");
    t.setDaemon(true);
    t.start();
    return new InetSocketAddress("127.0.0.1", server.getLocalPort());
  }

  private static String get(String path) {
    return "GET " + path + " HTTP/1.1\r\nhost: relay\r\n\r\n";
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

  /** Writes {@code requests} on a new connection and reads every reply until the relay closes it. */
  private static List<String> untilClosed(int port, String requests) throws IOException {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write(requests.getBytes(StandardCharsets.UTF_8));
      InputStream in = s.getInputStream();
      List<String> bodies = new ArrayList<>();
      for (String r = readReply(in); r != null; r = readReply(in)) {
        bodies.add(r);
      }
      return bodies;
    }
  }

  /** One reply: its status line's code and its body, "CODE body"; null at the end of the stream. */
  private static String readReply(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      int c = in.read();
      if (c < 0 && head.size() == 0) {
        return null;
      }
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

    assertThat(untilClosed(relay.port(),
        post("/ok", 7) + "POST /bad HTTP/1.1\r\ncontent-length: x\r\n\r\n" + post("/after", 1)))
        .containsExactly("200 a POST /ok 7", "400 ");
  }

  @Test
  void closesTheConnectionAfterARequestThatAsksForIt() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(backend("a")), 1);

    assertThat(untilClosed(relay.port(), "GET /z HTTP/1.1\r\nhost: relay\r\nconnection: close\r\n\r\n" + get("/no")))
        .containsExactly("200 a GET /z 0");
  }

  @Test
  void goesRoundRobinAcrossConnections() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(backend("a"), backend("b")), 1);

    assertThat(exchange(relay.port(), get("/1"), 1)).containsExactly("200 a GET /1 0");
    assertThat(exchange(relay.port(), get("/2"), 1)).containsExactly("200 b GET /2 0");
  }

  @Test
  void dropsInformationalRepliesAndRelaysTheFinalOne() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(rawBackend(head ->
        "HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfinal")), 1);

    assertThat(exchange(relay.port(), get("/1") + get("/2"), 2)).containsExactly("200 final", "200 final");
  }

  @Test
  void answers502ForAReplyThatIsNotHttp() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0,
        List.of(rawBackend(head -> "NOT HTTP AT ALL\r\n\r\n"), backend("b")), 1);

    assertThat(exchange(relay.port(), get("/1") + get("/2") + get("/3"), 3))
        .containsExactly("502 ", "200 b GET /2 0", "502 ");
  }

  @Test
  void opensANewBackendConnectionAfterAReplyThatClosesIt() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(rawBackend(head ->
        "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok")), 1);

    assertThat(exchange(relay.port(), get("/1") + get("/2") + get("/3"), 3)).containsExactly("200 ok", "200 ok", "200 ok");
  }

  @Test
  void answers413ForATooLargeBodyAfterTheRepliesBeforeIt() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(backend("a")), 1);

    assertThat(untilClosed(relay.port(), get("/first") + "POST /big HTTP/1.1\r\nhost: relay\r\ncontent-length: "
        + (NettyRelay.MAX_BODY_BYTES + 1) + "\r\n\r\n"))
        .containsExactly("200 a GET /first 0", "413 ");
  }

  @Test
  void keepsAHeadReplysContentLength() throws IOException {
    relay = NettyRelay.start("127.0.0.1", 0, List.of(rawBackend(head ->
        "HTTP/1.1 200 OK\r\ncontent-length: 12345\r\n\r\n")), 1);
    try (Socket s = new Socket("127.0.0.1", relay.port())) {
      s.setSoTimeout(10_000);
      s.getOutputStream().write("HEAD /h HTTP/1.1\r\nhost: relay\r\n\r\n".getBytes(StandardCharsets.UTF_8));
      ByteArrayOutputStream head = new ByteArrayOutputStream();
      InputStream in = s.getInputStream();
      while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
        head.write(in.read());
      }

      assertThat(head.toString(StandardCharsets.ISO_8859_1).toLowerCase()).contains("content-length: 12345");
    }
  }
}
