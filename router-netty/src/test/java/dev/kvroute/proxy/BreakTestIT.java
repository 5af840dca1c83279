package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Findings of the 2026-12 break test over real sockets: a bad body {@code priority}, a garbage
 * priority header, a non-JSON {@code Content-Type} and an unbounded {@code n} were routed to an engine
 * (or read as priority 0); each is now a 400 the router answers itself, before any engine sees the
 * request, and the connection stays usable for the next request.
 */
@ExtendWith(NettyLeakExtension.class)
final class BreakTestIT {
  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> ENGINE = new ServerExtension<>(() -> new FakeBackend("e"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> KvrouteServer.start(
      ProxyConfig.defaults().withPort(0).withPolicy("round-robin")
          // no probes: a busy machine must not turn the one backend unhealthy under these tests
          .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(5), 2, 1, Duration.ZERO))
          .withBackendUrls(List.of(ENGINE.get().uri()))));

  static String chat(String extra) {
    return "{\"model\":\"fake-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":2" + extra + "}";
  }

  /** Sends one POST on {@code c} (kept alive) and reads its answer. */
  static RawHttp.Response post(RawHttp c, String path, String headers, String body) throws Exception {
    c.send("POST " + path + " HTTP/1.1\r\nHost: router\r\n" + headers + "Content-Length: " + body.length() + "\r\n\r\n"
        + body);
    return c.read();
  }

  static int engineRequests() {
    return (int) ENGINE.get().received.stream().filter(r -> r.uri().startsWith("/v1/")).count();
  }

  /** A 400 written by the router itself, in OpenAI's error shape, that keeps the connection open. */
  static void assertRouters400(RawHttp.Response r, String what, String param, String... says) {
    assertThat(r.status()).as(what).isEqualTo(400);
    assertThat(r.header("content-type")).as(what).isEqualTo("application/json");
    assertThat(r.header("x-kvroute-backend")).as(what).isNull();
    assertThat(r.header("connection")).as(what).isNotEqualTo("close");
    assertThat(r.bodyText()).as(what).contains("\"type\":\"BadRequestError\"").contains("\"code\":400")
        .contains(param == null ? "\"param\":null" : "\"param\":\"" + param + "\"").contains(says);
  }

  @Test
  void badBodyPriorityWasIgnoredByTheRouterAndIsNow400() throws Exception {
    int before = engineRequests();
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      for (String p : List.of("\"x\"", "1e99", "1.5", "[0]", "{}")) {
        for (String path : List.of("/v1/chat/completions", "/v1/completions")) {
          String body = path.endsWith("chat/completions") ? chat(",\"priority\":" + p)
              : "{\"model\":\"fake-model\",\"prompt\":\"hi\",\"priority\":" + p + "}";
          assertRouters400(post(c, path, "Content-Type: application/json\r\n", body), p + " " + path, "priority",
              "priority: ", "expected: an integer");
        }
      }
      assertThat(engineRequests()).isEqualTo(before);
      // what vLLM's request model accepts is forwarded as sent
      for (String p : List.of("-1", "3", "true", "\"2\"", "4.0", "null")) {
        RawHttp.Response r = post(c, "/v1/chat/completions", "Content-Type: application/json\r\n", chat(",\"priority\":" + p));
        assertThat(r.status()).as(p).isEqualTo(200);
        assertThat(r.header("x-kvroute-backend")).as(p).isNotNull();
      }
    }
  }

  @Test
  void garbagePriorityHeaderWasReadAsZeroAndIsNow400NamingTheHeader() throws Exception {
    int before = engineRequests();
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      for (String h : List.of("abc", "1e9", "", "1.5", "99999999999", "0x10")) {
        assertRouters400(post(c, "/v1/chat/completions", "Content-Type: application/json\r\nx-kvroute-priority: " + h + "\r\n",
            chat("")), "header '" + h + "'", null, "x-kvroute-priority: \\\"" + h + "\\\"", "expected: a decimal integer");
      }
      assertThat(engineRequests()).isEqualTo(before);
      for (String h : List.of("-3", "0", "+7", "2147483647")) {
        assertThat(post(c, "/v1/chat/completions", "Content-Type: application/json\r\nX-Kvroute-Priority: " + h + "\r\n",
            chat("")).status()).as(h).isEqualTo(200);
      }
    }
  }

  @Test
  void nonJsonContentTypeWasRoutedAndIsNow400AsVllmAnswersIt() throws Exception {
    int before = engineRequests();
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      for (String type : List.of("text/plain", "application/x-www-form-urlencoded", "text/json", "multipart/form-data")) {
        assertRouters400(post(c, "/v1/chat/completions", "Content-Type: " + type + "\r\n", chat("")), type, null,
            "Content-Type: " + type, "expected: application/json");
      }
      assertThat(engineRequests()).isEqualTo(before);
      for (String headers : List.of("Content-Type: application/json; charset=utf-8\r\n", "",
          "Content-Type: application/vnd.kvroute+json\r\n")) {
        assertThat(post(c, "/v1/chat/completions", headers, chat("")).status()).as(headers).isEqualTo(200);
      }
    }
  }

  @Test
  void unboundedNWasForwardedAndIsNow400AtVllmsLimit() throws Exception {
    int before = engineRequests();
    try (RawHttp c = new RawHttp(ROUTER.get().port())) {
      assertRouters400(post(c, "/v1/chat/completions", "Content-Type: application/json\r\n", chat(",\"n\":100000")),
          "n=100000", "n", "n must be at most 16384, got 100000. To increase this limit, set the VLLM_MAX_N_SEQUENCES");
      assertRouters400(post(c, "/v1/completions", "Content-Type: application/json\r\n",
          "{\"model\":\"fake-model\",\"prompt\":\"hi\",\"n\":0}"), "n=0", "n", "n must be at least 1, got 0.");
      assertThat(engineRequests()).isEqualTo(before);
      assertThat(post(c, "/v1/chat/completions", "Content-Type: application/json\r\n", chat(",\"n\":16384")).status())
          .isEqualTo(200);
    }
  }
}
