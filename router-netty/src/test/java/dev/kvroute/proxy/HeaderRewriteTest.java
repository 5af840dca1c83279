package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import org.junit.jupiter.api.Test;

final class HeaderRewriteTest {

  @Test
  void theUpstreamRequestGetsTheBackendsHostTheRoutersIdAndTheClientAppendedToForwardedFor() {
    HttpHeaders client = new DefaultHttpHeaders()
        .add("Host", "router.example")
        .add("Expect", "100-continue")
        .add("X-Request-Id", "client-id")
        .add("X-Forwarded-For", "10.0.0.1")
        .add("Connection", "keep-alive")
        .add("Content-Length", "999")
        .add("Authorization", "Bearer k");
    HttpHeaders h = HeaderRewrite.upstreamRequest(client, HttpMethod.POST, 12, "10.0.0.5:8000", "router-id", "192.168.1.7");
    assertThat(h.get("Host")).isEqualTo("10.0.0.5:8000");
    assertThat(h.getAll("X-Request-Id")).containsExactly("router-id");
    assertThat(h.get("X-Forwarded-For")).isEqualTo("10.0.0.1, 192.168.1.7");
    assertThat(h.get("Content-Length")).isEqualTo("12");
    assertThat(h.get("Authorization")).isEqualTo("Bearer k");
    assertThat(h.contains("Expect")).isFalse();
    assertThat(h.contains("Connection")).isFalse();
    assertThat(client.get("Host")).as("input untouched").isEqualTo("router.example");
  }

  @Test
  void contentLengthGoesUpstreamForABodyOrABodyMethodOnly() {
    HttpHeaders none = new DefaultHttpHeaders();
    assertThat(HeaderRewrite.upstreamRequest(none, HttpMethod.GET, 0, "b", "id", null).contains("Content-Length")).isFalse();
    assertThat(HeaderRewrite.upstreamRequest(none, HttpMethod.POST, 0, "b", "id", null).get("Content-Length")).isEqualTo("0");
    assertThat(HeaderRewrite.upstreamRequest(none, HttpMethod.GET, 3, "b", "id", null).get("Content-Length")).isEqualTo("3");
    assertThat(HeaderRewrite.upstreamRequest(none, HttpMethod.GET, 0, "b", "id", null).contains("X-Forwarded-For"))
        .as("no address, no X-Forwarded-For").isFalse();
    assertThat(HeaderRewrite.upstreamRequest(none, HttpMethod.GET, 0, "b", "id", "1.2.3.4").get("X-Forwarded-For"))
        .isEqualTo("1.2.3.4");
    HttpHeaders twoLines = new DefaultHttpHeaders().add("X-Forwarded-For", "203.0.113.9")
        .add("X-Forwarded-For", "10.0.0.1, 10.0.0.2");
    HttpHeaders joined = HeaderRewrite.upstreamRequest(twoLines, HttpMethod.GET, 0, "b", "id", "192.168.1.7");
    assertThat(joined.getAll("X-Forwarded-For")).as("every line, in order, then the client")
        .containsExactly("203.0.113.9, 10.0.0.1, 10.0.0.2, 192.168.1.7");
  }

  private static HttpResponse upstream(int status, String... headers) {
    HttpResponse r = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status));
    for (int i = 0; i < headers.length; i += 2) {
      r.headers().add(headers[i], headers[i + 1]);
    }
    return r;
  }

  @Test
  void aKnownLengthIsKeptAndTheBackendIsNamed() {
    HeaderRewrite.ClientHead head = HeaderRewrite.clientResponse(
        upstream(200, "Content-Length", "42", "Content-Type", "application/json", "Keep-Alive", "timeout=5"),
        "b1", "rid", HttpMethod.POST, HttpVersion.HTTP_1_1, true);
    HttpHeaders h = head.headers();
    assertThat(head.closeAfter()).isFalse();
    assertThat(h.get("Content-Length")).isEqualTo("42");
    assertThat(h.get("x-kvroute-backend")).isEqualTo("b1");
    assertThat(h.get("x-request-id")).isEqualTo("rid");
    assertThat(h.contains("Transfer-Encoding")).isFalse();
    assertThat(h.contains("Keep-Alive")).isFalse();
    assertThat(h.contains("Connection")).isFalse();
  }

  @Test
  void aBackendNameThatIsNoHeaderValueIsRefusedNotSent() {
    // the built headers do not validate again (their copies were validated when decoded); the
    // router's own backend name is checked here instead
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> HeaderRewrite.clientResponse(
            upstream(200, "Content-Length", "0"), "b1\r\nSet-Cookie: x=1", "rid", HttpMethod.POST, HttpVersion.HTTP_1_1, true))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("backend name");
  }

  @Test
  void theBackendsRequestIdWins() {
    HttpHeaders h = HeaderRewrite.clientResponse(upstream(200, "Content-Length", "0", "X-Request-Id", "engine-id"),
        "b1", "rid", HttpMethod.POST, HttpVersion.HTTP_1_1, true).headers();
    assertThat(h.getAll("x-request-id")).containsExactly("engine-id");
  }

  @Test
  void anUnknownLengthIsChunkedForHttp11AndCloseDelimitedForHttp10() {
    HeaderRewrite.ClientHead v11 = HeaderRewrite.clientResponse(upstream(200, "Transfer-Encoding", "chunked"),
        "b1", "rid", HttpMethod.POST, HttpVersion.HTTP_1_1, true);
    assertThat(v11.headers().get("Transfer-Encoding")).isEqualTo("chunked");
    assertThat(v11.closeAfter()).isFalse();
    assertThat(v11.headers().contains("Connection")).isFalse();

    HeaderRewrite.ClientHead v10 = HeaderRewrite.clientResponse(upstream(200, "Transfer-Encoding", "chunked"),
        "b1", "rid", HttpMethod.POST, HttpVersion.HTTP_1_0, true);
    assertThat(v10.headers().contains("Transfer-Encoding")).isFalse();
    assertThat(v10.headers().contains("Content-Length")).isFalse();
    assertThat(v10.closeAfter()).isTrue();
    assertThat(v10.headers().get("Connection")).isEqualTo("close");
  }

  @Test
  void aKeptHttp10ClientIsToldKeepAliveAndAClosingOneClose() {
    assertThat(HeaderRewrite.clientResponse(upstream(200, "Content-Length", "1"), "b", "r", HttpMethod.GET,
        HttpVersion.HTTP_1_0, true).headers().get("Connection")).isEqualTo("keep-alive");
    assertThat(HeaderRewrite.clientResponse(upstream(200, "Content-Length", "1"), "b", "r", HttpMethod.GET,
        HttpVersion.HTTP_1_1, false).headers().get("Connection")).isEqualTo("close");
  }

  @Test
  void bodylessResponsesGetNoFraming() {
    for (Object[] c : new Object[][] {{204, HttpMethod.POST}, {304, HttpMethod.GET}, {200, HttpMethod.HEAD}}) {
      HeaderRewrite.ClientHead head = HeaderRewrite.clientResponse(upstream((Integer) c[0]), "b", "r",
          (HttpMethod) c[1], HttpVersion.HTTP_1_0, true);
      assertThat(head.headers().contains("Transfer-Encoding")).as("%s", c[0]).isFalse();
      assertThat(head.closeAfter()).as("%s", c[0]).isFalse();
    }
  }
}
