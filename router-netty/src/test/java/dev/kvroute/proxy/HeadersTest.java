package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import org.junit.jupiter.api.Test;

final class HeadersTest {
  @Test
  void hopByHopAndConnectionListedHeadersAreDropped() {
    HttpHeaders from = new DefaultHttpHeaders()
        .add("Connection", "keep-alive, X-Hop")
        .add("X-Hop", "1")
        .add("Keep-Alive", "timeout=5")
        .add("Transfer-Encoding", "chunked")
        .add("Content-Length", "12")
        .add("TE", "trailers")
        .add("Trailer", "x")
        .add("Upgrade", "h2c")
        .add("Proxy-Authorization", "Basic x")
        .add("Proxy-Connection", "keep-alive")
        .add("Authorization", "Bearer k")
        .add("X-End", "a")
        .add("X-End", "b")
        .add("Host", "client-side");
    HttpHeaders to = new DefaultHttpHeaders();
    Headers.copyEndToEnd(from, to, HttpHeaderNames.HOST);
    assertThat(to.names()).containsExactlyInAnyOrder("Authorization", "X-End");
    assertThat(to.getAll("X-End")).containsExactly("a", "b");
  }
}
