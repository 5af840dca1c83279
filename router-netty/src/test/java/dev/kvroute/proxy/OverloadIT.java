package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.TimeoutConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Overload as clients see it: never a 200 without an answer, busy engines stay in rotation, the
 * router's queue answers 429/503 with {@code Retry-After} and a JSON body.
 */
@ExtendWith(NettyLeakExtension.class)
final class OverloadIT {
  static final String STREAM = "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}";

  final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  static ProxyConfig base(List<URI> backends, Duration firstByte, Duration idle) {
    return ProxyFailureIT.base("round-robin", backends)
        .withTimeouts(new TimeoutConfig(Duration.ofSeconds(3), firstByte, idle, Duration.ofSeconds(60)));
  }

  HttpResponse<String> post(KvrouteServer router, String body, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(router.uri().resolve("/v1/chat/completions"))
        .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aHeadWithNoBodyBeforeTheFirstByteTimeoutIsAJson504NotAnEmpty200() throws Exception {
    try (FakeBackend engine = new FakeBackend("queued");
        KvrouteServer router = KvrouteServer.start(base(List.of(engine.uri()), Duration.ofMillis(500), Duration.ofSeconds(5)))) {
      HttpResponse<String> r = post(router, STREAM, "x-fake", "head-delay-ms=5000");
      assertThat(r.statusCode()).isEqualTo(504);
      assertThat(r.headers().firstValue("content-type")).hasValue("application/json");
      assertThat(r.body()).contains("\"error\"").contains("GatewayTimeoutError").contains("sent no response within 500 ms");
      HttpResponse<String> next = post(router, STREAM);
      assertThat(next.statusCode()).isEqualTo(200);
      assertThat(next.body()).endsWith("data: [DONE]\n\n");
    }
  }

  @Test
  void aHeadHeldUntilTheFirstByteIsRetriedOnAnotherBackend() throws Exception {
    try (FakeBackend slow = new FakeBackend("slow");
        FakeBackend fast = new FakeBackend("fast");
        KvrouteServer router = KvrouteServer.start(base(List.of(slow.uri(), fast.uri()), Duration.ofMillis(500), Duration.ofSeconds(5)))) {
      slow.forcedDirectives.set("head-delay-ms=5000");
      for (int i = 0; i < 2; i++) {
        HttpResponse<String> r = post(router, STREAM);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("x-kvroute-backend")).hasValue(ProxyFailureIT.id(fast).name());
        assertThat(r.body()).contains("wörd0").endsWith("data: [DONE]\n\n");
      }
    }
  }

  @Test
  void aStreamThatStallsMidwayEndsWithAnSseErrorEventAndDone() throws Exception {
    try (FakeBackend engine = new FakeBackend("stalls");
        KvrouteServer router = KvrouteServer.start(base(List.of(engine.uri()), Duration.ofSeconds(5), Duration.ofMillis(500)))) {
      HttpResponse<String> r = post(router, STREAM, "x-fake", "events=3;stall-after=1");
      assertThat(r.statusCode()).isEqualTo(200);
      assertThat(r.body()).contains("wörd0").doesNotContain("wörd1");
      assertThat(r.body()).contains("\ndata: {\"error\":{\"message\":\"backend ")
          .contains("sent nothing for 500 ms").contains("\"code\":504")
          .endsWith("}}\n\ndata: [DONE]\n\n");
      assertThat(router.scrapeMetrics()).contains("kvroute_stream_error_events_total 1.0");
      HttpResponse<String> next = post(router, STREAM);
      assertThat(next.statusCode()).isEqualTo(200);
      assertThat(next.body()).endsWith("data: [DONE]\n\n");
    }
  }
}
