package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.proxy.config.AdminConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The admin API's authentication and its answers to bad requests. */
@ExtendWith(NettyLeakExtension.class)
final class AdminApiIT {
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5)).build();

  private HttpResponse<String> send(URI admin, String method, String path, String body, String auth) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(admin.resolve(path)).timeout(Duration.ofSeconds(10))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    if (auth != null) {
      b.header("Authorization", auth);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void bearerTokenWithAnyCaseOfTheSchemeAndClearErrors() throws Exception {
    try (FakeBackend backend = new FakeBackend("b");
        FakeBackend other = new FakeBackend("o");
        KvrouteServer router = KvrouteServer.start(ProxyFailureIT.base("round-robin", List.of(backend.uri()))
            .withAdmin(new AdminConfig(0, "127.0.0.1", "s3cret")))) {
      URI admin = router.adminUri();
      assertThat(send(admin, "GET", "/admin/backends", null, null).statusCode()).isEqualTo(401);
      assertThat(send(admin, "GET", "/admin/backends", null, "Bearer wrong").statusCode()).isEqualTo(401);
      assertThat(send(admin, "GET", "/admin/backends", null, "Basic s3cret").statusCode()).isEqualTo(401);
      assertThat(send(admin, "GET", "/admin/backends", null, "Bearer s3cret").statusCode()).isEqualTo(200);
      assertThat(send(admin, "GET", "/admin/backends", null, "bearer s3cret").statusCode()).isEqualTo(200);
      assertThat(send(admin, "GET", "/admin/backends", null, "BEARER  s3cret").statusCode()).isEqualTo(200);

      String auth = "Bearer s3cret";
      HttpResponse<String> dup = send(admin, "POST", "/admin/backends",
          "{\"url\":\"" + backend.uri() + "\",\"name\":\"again\"}", auth);
      assertThat(dup.statusCode()).isEqualTo(409);
      assertThat(dup.body()).contains("already backend");

      HttpResponse<String> badJson = send(admin, "POST", "/admin/backends", "{\"url\":", auth);
      assertThat(badJson.statusCode()).isEqualTo(400);
      assertThat(badJson.body()).contains("malformed JSON").doesNotContain("REDACTED").doesNotContain("StreamReadFeature");

      HttpResponse<String> badUrl = send(admin, "POST", "/admin/backends", "{\"url\":\"http://\"}", auth);
      assertThat(badUrl.statusCode()).isEqualTo(400);
      assertThat(badUrl.body()).contains("expected: an http://host[:port][/path] URL").doesNotContain("index 7");

      for (String bad : List.of(
          "{\"url\":\"http://127.0.0.1:99999\",\"name\":\"typo\"}",
          "{\"url\":\"http://user:pw@127.0.0.1:1\"}",
          "{\"url\":\"" + other.uri() + "\",\"name\":\"bad/name\"}",
          "{\"url\":\"" + other.uri() + "\",\"name\":123}",
          "{\"url\":\"" + other.uri() + "\",\"capacityTokens\":\"lots\"}",
          "{\"url\":\"" + other.uri() + "\",\"capacityTokens\":1e30}",
          "{\"url\":\"" + other.uri() + "\",\"capacityTokens\":99999999999999}",
          "{\"url\":\"" + other.uri() + "\",\"capacityToken\":1000}",
          "{\"url\":\"" + other.uri() + "\",\"models\":[\"m\"]}")) {
        HttpResponse<String> r = send(admin, "POST", "/admin/backends", bad, auth);
        assertThat(r.statusCode()).as(bad).isEqualTo(400);
        assertThat(r.body()).as(bad).doesNotContain("Exception").doesNotContain("pw");
      }
      // a misspelt or unsupported field was ignored (the backend added without it) and is now named
      assertThat(send(admin, "POST", "/admin/backends", "{\"url\":\"" + other.uri() + "\",\"capacityToken\":1000}", auth)
          .body()).contains("capacityToken: unknown key (expected one of: capacityTokens, name, url)");
      assertThat(router.backends()).hasSize(1);
      assertThat(send(admin, "POST", "/admin/backends", "{\"url\":\"" + backend.uri() + "/\"}", auth).statusCode())
          .as("the same engine with a trailing slash").isEqualTo(409);

      assertThat(send(admin, "POST", "/admin/backends", "{\"url\":\"" + other.uri() + "\"}", auth).statusCode())
          .isEqualTo(201);
      assertThat(router.backends()).hasSize(2);
      // probing goes on for every backend (a bad one once stopped the periodic probes)
      assertThat(router.scrapeMetrics()).contains("kvroute_backend_healthy");
    }
  }
}
