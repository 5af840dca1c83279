package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

final class RequestAggregatorTest {
  EmbeddedChannel ch = new EmbeddedChannel(
      new HttpServerCodec(new HttpDecoderConfig().setMaxHeaderSize(1024).setMaxInitialLineLength(256)),
      new RequestAggregator(100));

  @AfterEach
  void finish() {
    ch.finishAndReleaseAll();
  }

  void in(String s) {
    ch.writeInbound(Unpooled.copiedBuffer(s, StandardCharsets.ISO_8859_1));
  }

  String outbound() {
    StringBuilder sb = new StringBuilder();
    ByteBuf b;
    while ((b = ch.readOutbound()) != null) {
      sb.append(b.toString(StandardCharsets.ISO_8859_1));
      b.release();
    }
    return sb.toString();
  }

  /** Writes {@code s} in direct buffers of {@code piece} bytes, as a native socket's reads arrive; returns them. */
  List<ByteBuf> inDirect(String s, int piece) {
    byte[] bytes = s.getBytes(StandardCharsets.ISO_8859_1);
    List<ByteBuf> reads = new java.util.ArrayList<>();
    for (int i = 0; i < bytes.length; i += piece) {
      ByteBuf b = Unpooled.directBuffer(piece).writeBytes(bytes, i, Math.min(piece, bytes.length - i));
      reads.add(b);
      ch.writeInbound(b);
    }
    return reads;
  }

  static String forwarded(FullHttpRequest req) {
    ByteBuf f = AggregatedRequest.forwardedBody(req);
    try {
      return f.toString(StandardCharsets.ISO_8859_1);
    } finally {
      f.release();
    }
  }

  @Test
  void aContinueIsSentOnlyToAnHttp11Client() {
    in("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    assertThat(outbound()).isEqualTo("HTTP/1.1 100 Continue\r\n\r\n");
    in("{}");
    FullHttpRequest req = ch.readInbound();
    assertThat(req.headers().contains("expect")).isFalse();
    req.release();
    // RFC 9110 10.1.1: an HTTP/1.0 client would take the 1xx for its response; its body comes anyway
    in("POST /v1/completions HTTP/1.0\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}");
    assertThat(outbound()).isEmpty();
    FullHttpRequest old = ch.readInbound();
    assertThat(old.content().toString(StandardCharsets.ISO_8859_1)).isEqualTo("{}");
    old.release();
  }

  @Test
  void aBodyThatArrivedInDirectBuffersIsForwardedFromThemAndReleasedWithTheRequest() {
    ch = new EmbeddedChannel(new HttpServerCodec(), new RequestAggregator(1 << 20));
    String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"" + "x".repeat(3000) + "\"}]}";
    List<ByteBuf> reads = inDirect("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + body.length()
        + "\r\n\r\n" + body, 1024);
    FullHttpRequest req = ch.readInbound();
    assertThat(req).isInstanceOf(AggregatedRequest.class);
    // parsing reads the heap copy in place; forwarding writes the bytes as they arrived, no copy
    assertThat(req.content().hasArray()).isTrue();
    assertThat(req.content().toString(StandardCharsets.ISO_8859_1)).isEqualTo(body);
    ByteBuf f = AggregatedRequest.forwardedBody(req);
    assertThat(f.isDirect()).isTrue();
    assertThat(f.toString(StandardCharsets.ISO_8859_1)).isEqualTo(body);
    f.release();
    // kept past the request by retaining the request: the arrival buffers stay until its last release
    req.retain();
    req.release();
    assertThat(reads.get(reads.size() - 1).refCnt()).isPositive();
    assertThat(forwarded(req)).isEqualTo(body);
    req.release();
    assertThat(reads).allSatisfy(b -> assertThat(b.refCnt()).isZero());
  }

  @Test
  void aBodyInTooManyPiecesOrInHeapBuffersIsForwardedFromItsHeapCopy() {
    ch = new EmbeddedChannel(new HttpServerCodec(), new RequestAggregator(1 << 20));
    String body = "y".repeat(RequestAggregator.MAX_ARRIVAL_BUFFERS * 8 + 5);
    String head = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + body.length() + "\r\n\r\n";
    List<ByteBuf> reads = inDirect(head, 1 << 10);
    reads.addAll(inDirect(body, 4)); // a body trickled in small reads, each holding a read buffer
    FullHttpRequest req = ch.readInbound();
    assertThat(req).isNotInstanceOf(AggregatedRequest.class);
    assertThat(forwarded(req)).isEqualTo(body);
    req.release();
    assertThat(reads).allSatisfy(b -> assertThat(b.refCnt()).isZero());

    in(head + body); // heap reads: nothing to save by keeping them
    FullHttpRequest heap = ch.readInbound();
    assertThat(heap).isNotInstanceOf(AggregatedRequest.class);
    assertThat(forwarded(heap)).isEqualTo(body);
    heap.release();
  }

  @Test
  void aRequestClosedMidBodyReleasesItsArrivalBuffers() {
    ch = new EmbeddedChannel(new HttpServerCodec(), new RequestAggregator(1 << 20));
    List<ByteBuf> reads = inDirect("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"
        + "z".repeat(3000), 1000);
    assertThat(ch.<Object>readInbound()).isNull();
    ch.close();
    assertThat(reads).allSatisfy(b -> assertThat(b.refCnt()).isZero());
  }

  @Test
  void chunkedBodyIsAggregatedWithContentLength() {
    in("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    FullHttpRequest req = ch.readInbound();
    try {
      assertThat(req.content().toString(StandardCharsets.UTF_8)).isEqualTo("abcde");
      assertThat(req.headers().get(HttpHeaderNames.CONTENT_LENGTH)).isEqualTo("5");
      assertThat(req.headers().contains(HttpHeaderNames.TRANSFER_ENCODING)).isFalse();
    } finally {
      req.release();
    }
  }

  @Test
  void chunkedBodyOverTheLimitIsRejectedOnBytesRead() {
    in("POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    in("40\r\n" + "a".repeat(64) + "\r\n");
    assertThat(ch.<Object>readInbound()).isNull();
    in("40\r\n" + "b".repeat(64) + "\r\n0\r\n\r\n");
    RejectedRequest r = ch.readInbound();
    assertThat(r.status()).isEqualTo(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE);
    // what follows is drained and released
    in("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    assertThat(ch.<Object>readInbound()).isNull();
  }

  @Test
  void declaredLengthOverTheLimitIsRejectedAtOnce() {
    in("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n");
    RejectedRequest r = ch.readInbound();
    assertThat(r.status().code()).isEqualTo(413);
  }

  @Test
  void tooLargeHeaderBlockIs431AndTooLongLineIs414() {
    in("GET /health HTTP/1.1\r\nx-big: " + "h".repeat(2000) + "\r\n\r\n");
    assertThat(((RejectedRequest) ch.readInbound()).status().code()).isEqualTo(431);
    EmbeddedChannel other = new EmbeddedChannel(
        new HttpServerCodec(new HttpDecoderConfig().setMaxInitialLineLength(256)), new RequestAggregator(100));
    other.writeInbound(Unpooled.copiedBuffer("GET /" + "p".repeat(400) + " HTTP/1.1\r\n\r\n", StandardCharsets.ISO_8859_1));
    assertThat(((RejectedRequest) other.readInbound()).status().code()).isEqualTo(414);
    other.finishAndReleaseAll();
  }

  @Test
  void expectContinueIsAnsweredHereAndRemoved() {
    in("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n");
    assertThat(outbound()).startsWith("HTTP/1.1 100 Continue\r\n");
    in("{}");
    FullHttpRequest req = ch.readInbound();
    try {
      assertThat(req.headers().contains(HttpHeaderNames.EXPECT)).isFalse();
      assertThat(req.content().toString(StandardCharsets.UTF_8)).isEqualTo("{}");
    } finally {
      req.release();
    }
  }

  @Test
  void expectContinueWithTooLargeLengthGetsNoContinue() {
    in("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n");
    assertThat(outbound()).isEmpty();
    assertThat(((RejectedRequest) ch.readInbound()).status().code()).isEqualTo(413);
  }

  @Test
  void unsupportedExpectationIs417() {
    in("POST /v1/completions HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 2\r\n\r\n{}");
    assertThat(((RejectedRequest) ch.readInbound()).status().code()).isEqualTo(417);
  }

  @Test
  void rejectionAnswerIsOpenAiJsonWithConnectionClose() {
    var resp = new RejectedRequest(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, "too big").response(ch.alloc());
    try {
      assertThat(resp.headers().get(HttpHeaderNames.CONNECTION)).isEqualTo("close");
      assertThat(resp.content().toString(StandardCharsets.UTF_8)).isEqualTo(
          "{\"error\":{\"message\":\"too big\",\"type\":\"RequestTooLargeError\",\"param\":null,\"code\":413}}");
    } finally {
      resp.release();
    }
  }

  /** The status the head gets from a fresh aggregator (big enough limits), or 0 when accepted. */
  static int statusOf(String head) {
    EmbeddedChannel c = new EmbeddedChannel(new HttpServerCodec(), new RequestAggregator(1 << 20));
    try {
      c.writeInbound(Unpooled.copiedBuffer(head, StandardCharsets.ISO_8859_1));
      Object m = c.readInbound();
      if (m instanceof RejectedRequest) {
        return ((RejectedRequest) m).status().code();
      }
      assertThat(m).as(head).isInstanceOf(FullHttpRequest.class);
      ((FullHttpRequest) m).release();
      return 0;
    } finally {
      c.finishAndReleaseAll();
    }
  }

  static String post(String headers, String body) {
    return "POST /v1/embeddings HTTP/1.1\r\n" + headers + "Content-Length: " + body.length() + "\r\n\r\n" + body;
  }

  @Test
  void duplicatedMissingOrInvalidHostWasForwardedAndIsNow400() {
    assertThat(statusOf(post("Host: a\r\nHost: b\r\n", "{}"))).as("two Host lines").isEqualTo(400);
    assertThat(statusOf(post("host: a\r\nHOST: a\r\n", "{}"))).as("the same Host twice").isEqualTo(400);
    assertThat(statusOf(post("", "{}"))).as("no Host").isEqualTo(400);
    for (String bad : List.of("a b@c", "user@h", "u:p@h:80", "", " ", "h:99999", "h:8o", ":80", "[::1", "::1", "[::1]x",
        "[zz]", "h/x", "h?x", "h#x", "a%zz", "h:80:80")) {
      assertThat(statusOf(post("Host: " + bad + "\r\n", "{}"))).as("Host: " + bad).isEqualTo(400);
    }
    for (String good : List.of("a", "router.example:8080", "127.0.0.1", "127.0.0.1:80", "[::1]", "[::1]:8080",
        "[2001:db8::7]:1", "[v1.fe:x]", "h:", "xn--bcher-kva.example", "a%41b", "H_1-x~")) {
      assertThat(statusOf(post("Host: " + good + "\r\n", "{}"))).as("Host: " + good).isZero();
    }
    assertThat(statusOf("GET /health HTTP/1.0\r\n\r\n")).as("HTTP/1.0 needs no Host").isZero();
    assertThat(statusOf("GET /health HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n")).isEqualTo(400);
  }

  @Test
  void http2RequestLineWasServedAsHttp11AndIsNow505() {
    for (String version : List.of("HTTP/2.0", "HTTP/3.0", "HTTP/0.9")) {
      assertThat(statusOf("GET /health " + version + "\r\nHost: a\r\n\r\n")).as(version).isEqualTo(505);
    }
    assertThat(statusOf("GET /health HTTP/1.2\r\nHost: a\r\n\r\n")).as("a later 1.x is 1.1").isZero();
    in("POST /v1/embeddings HTTP/2.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
    RejectedRequest r = ch.readInbound();
    var resp = r.response(ch.alloc());
    try {
      assertThat(resp.protocolVersion().text()).isEqualTo("HTTP/1.1");
      assertThat(resp.content().toString(StandardCharsets.UTF_8)).contains("\"type\":\"HTTPVersionNotSupportedError\"")
          .contains("HTTP version HTTP/2.0");
    } finally {
      resp.release();
    }
  }

  @Test
  void transferCodingOtherThanChunkedAloneWasForwardedAndIsNowRefused() {
    String chunks = "2\r\n{}\r\n0\r\n\r\n";
    String head = "POST /v1/embeddings HTTP/1.1\r\nHost: x\r\n";
    assertThat(statusOf(head + "Transfer-Encoding: chunked\r\n\r\n" + chunks)).isZero();
    assertThat(statusOf(head + "Transfer-Encoding: Chunked\r\n\r\n" + chunks)).as("case").isZero();
    for (String te : List.of("gzip, chunked", "GZIP,chunked", "identity, chunked", "deflate, chunked", "x;q=1, chunked")) {
      assertThat(statusOf(head + "Transfer-Encoding: " + te + "\r\n\r\n" + chunks)).as(te).isEqualTo(501);
    }
    assertThat(statusOf(head + "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks))
        .as("codings in two header lines").isEqualTo(501);
    for (String te : List.of("chunked, chunked", "chunked, gzip", "gzip", "identity", "", "chunked,")) {
      assertThat(statusOf(head + "Transfer-Encoding: " + te + "\r\n\r\n" + chunks)).as(te).isEqualTo(400);
    }
    assertThat(statusOf(head + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks))
        .as("chunked twice over two lines").isEqualTo(400);
    assertThat(statusOf("POST /v1/embeddings HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks))
        .as("HTTP/1.0").isEqualTo(400);
  }

  @Test
  void rejectedTransferCodingsAnswer501AsNotImplementedError() {
    in("POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n");
    RejectedRequest r = ch.readInbound();
    var resp = r.response(ch.alloc());
    try {
      assertThat(resp.status().code()).isEqualTo(501);
      assertThat(resp.content().toString(StandardCharsets.UTF_8)).contains("\"type\":\"NotImplementedError\"")
          .contains("gzip, chunked");
    } finally {
      resp.release();
    }
    assertThat(ch.<Object>readInbound()).as("the body is drained, not passed on").isNull();
  }

  @Test
  void dotSegmentTargetIsRefusedBeforeTheBodyAndGoodTargetsAreNormalized() {
    in("POST /v1/%2e%2e/sleep HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n");
    RejectedRequest r = ch.readInbound();
    assertThat(r.status().code()).isEqualTo(400);
    assertThat(r.message()).contains("dot-segment");
    EmbeddedChannel c = new EmbeddedChannel(new HttpServerCodec(), new RequestAggregator(100));
    c.writeInbound(Unpooled.copiedBuffer("POST http://x/v1/ch%61t/completions?a=1 HTTP/1.1\r\nHost: x\r\n"
        + "Content-Length: 2\r\n\r\n{}", StandardCharsets.ISO_8859_1));
    FullHttpRequest req = c.readInbound();
    try {
      assertThat(req.uri()).isEqualTo("/v1/chat/completions?a=1");
    } finally {
      req.release();
      c.finishAndReleaseAll();
    }
  }

  @Test
  void headCheckRefusesBeforeTheBodyIsRead() {
    EmbeddedChannel c = new EmbeddedChannel(new HttpServerCodec(), new RequestAggregator(100,
        h -> AdminInitializer.authenticate(h, AdminInitializer.sha256("s3cret"))));
    try {
      c.writeInbound(Unpooled.copiedBuffer("POST /admin/backends HTTP/1.1\r\nHost: x\r\nContent-Length: 62914560\r\n\r\n",
          StandardCharsets.ISO_8859_1));
      RejectedRequest r = c.readInbound();
      assertThat(r.status().code()).as("401 before 413: the token is checked first").isEqualTo(401);
      assertThat(r.authenticate()).isEqualTo("Bearer");
      c.writeInbound(Unpooled.copiedBuffer("x".repeat(1000), StandardCharsets.ISO_8859_1));
      assertThat(c.<Object>readInbound()).isNull();
    } finally {
      c.finishAndReleaseAll();
    }
    for (String auth : List.of("Bearer s3cret", "bearer s3cret", "BEARER   s3cret ")) {
      EmbeddedChannel ok = new EmbeddedChannel(new HttpServerCodec(), new RequestAggregator(100,
          h -> AdminInitializer.authenticate(h, AdminInitializer.sha256("s3cret"))));
      ok.writeInbound(Unpooled.copiedBuffer("GET /admin/backends HTTP/1.1\r\nHost: x\r\nAuthorization: " + auth
          + "\r\n\r\n", StandardCharsets.ISO_8859_1));
      Object m = ok.readInbound();
      assertThat(m).as(auth).isInstanceOf(FullHttpRequest.class);
      ((FullHttpRequest) m).release();
      ok.finishAndReleaseAll();
    }
  }
}
