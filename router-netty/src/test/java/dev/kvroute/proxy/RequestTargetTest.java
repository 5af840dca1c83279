package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

final class RequestTargetTest {

  static String normalized(String uri) throws Exception {
    return RequestTarget.parse(uri).originForm();
  }

  @Test
  void dotSegmentsLeftTheApiAndAreNowRefusedInEveryEncoding() {
    for (String uri : List.of(
        "/v1/../metrics", "/v1/./chat/completions", "/v1/..", "/v1/.", "/..", "/.",
        "/v1/%2e%2e/metrics", "/v1/%2E%2E/metrics", "/v1/%2e%2E/sleep", "/v1/.%2e/metrics", "/v1/%2e./metrics",
        "/v1/%2e/chat/completions", "/v1/%2E", "/v1/chat/..?x=1", "http://h/v1/../metrics",
        "HTTP://h:8080/v1/%2e%2e/sleep")) {
      assertThatThrownBy(() -> RequestTarget.parse(uri)).as(uri)
          .isInstanceOf(RequestTarget.InvalidTargetException.class).hasMessageContaining("dot-segment");
    }
  }

  @Test
  void formsThatServersReadDifferentlyAreRefused() {
    for (String uri : List.of(
        "/v1\\..\\metrics", "/v1/%5c../metrics", "/v1/%5C..%5Cmetrics", "/v1/..%2fmetrics", "/v1/..%2Fmetrics",
        "/v1/..;/metrics", "/v1/chat/completions;jsessionid=1", "/v1/%3b/x",
        "//metrics", "/v1//chat/completions", "/v1/%252e%252e/metrics", "/v1/%00", "/v1/%zz", "/v1/%2",
        "/v1/chat completions", "/v1/\u00e9", "/v1/chat/completions#frag", "*", "v1/chat/completions",
        "ftp://h/v1/models", "http:///v1/models", "/v1/models?a=b c")) {
      assertThatThrownBy(() -> RequestTarget.parse(uri)).as(uri).isInstanceOf(RequestTarget.InvalidTargetException.class);
    }
  }

  @Test
  void unreservedEscapesAreDecodedAndOtherEscapesUpperCased() throws Exception {
    assertThat(normalized("/v1/ch%61t/completions")).isEqualTo("/v1/chat/completions");
    assertThat(normalized("/v1/%43hat/completions")).isEqualTo("/v1/Chat/completions");
    assertThat(normalized("/v1/responses/a%3ab%7e")).isEqualTo("/v1/responses/a%3Ab~");
    assertThat(normalized("/v1/models/")).as("a trailing '/' is not ambiguous").isEqualTo("/v1/models/");
    assertThat(normalized("/")).isEqualTo("/");
    assertThat(normalized("/v1/x.y/..z/.a")).as("dots inside a segment are fine").isEqualTo("/v1/x.y/..z/.a");
  }

  @Test
  void absoluteFormIsReducedToItsPathAndTheQueryIsKeptAsSent() throws Exception {
    assertThat(normalized("http://router:8080/v1/chat/completions")).isEqualTo("/v1/chat/completions");
    assertThat(normalized("HTTPS://[::1]:8080/v1/responses/r1?stream=true&x=%2e%2e"))
        .isEqualTo("/v1/responses/r1?stream=true&x=%2e%2e");
    assertThat(normalized("http://router")).isEqualTo("/");
    assertThat(normalized("http://router?x=1")).isEqualTo("/?x=1");
    assertThat(normalized("/v1/models?a=/../b")).isEqualTo("/v1/models?a=/../b");
  }
}
