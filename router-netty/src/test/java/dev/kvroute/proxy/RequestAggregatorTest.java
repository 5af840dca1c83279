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
}
