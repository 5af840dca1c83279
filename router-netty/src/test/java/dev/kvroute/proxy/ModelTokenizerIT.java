package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.tokenize.TinyHfModel;
import dev.kvroute.proxy.config.AdminConfig;
import dev.kvroute.proxy.config.ModelsConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.RoutingConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model's own tokenizer ({@code routing.tokenizers}) through the real router: a request naming the
 * model by an alias is tokenized with the served model's tokenizer and chat template, and a template
 * error is the engine's 400 on the proxy and on {@code /admin/explain} alike.
 */
class ModelTokenizerIT {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String TEMPLATE =
      "{% if messages[0].role != 'system' %}{{ raise_exception('System message required') }}{% endif %}"
      + "{% for m in messages %}<|im_start|>{{ m.role }} {{ m.content }}<|im_end|>{% endfor %}";

  private static String chat(String model, boolean system) {
    String messages = (system ? "{\"role\":\"system\",\"content\":\"be brief\"}," : "")
        + "{\"role\":\"user\",\"content\":\"hello there\"}";
    return "{\"model\":\"" + model + "\",\"max_tokens\":4,\"messages\":[" + messages + "]}";
  }

  private static RawHttp.Response post(int port, String path, String body) throws Exception {
    try (RawHttp c = new RawHttp(port)) {
      byte[] b = body.getBytes(StandardCharsets.UTF_8);
      c.send("POST " + path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\n"
          + "Content-Type: application/json\r\nContent-Length: " + b.length + "\r\n\r\n" + body);
      return c.read();
    }
  }

  @Test
  void anAliasIsTokenizedWithItsServedModelsTokenizerOnTheProxyAndInExplain(@TempDir Path dir) throws Exception {
    Path model = TinyHfModel.write(dir, TEMPLATE);
    RoutingConfig d = RoutingConfig.defaults();
    RoutingConfig routing = new RoutingConfig(d.sessionHeader(), d.sessionField(), d.tokenizer(), d.pageSizeTokens(),
        d.defaultCapacityTokens(), Map.of(FakeBackend.DEFAULT_MODEL, "hf:" + model));
    try (FakeBackend engine = new FakeBackend("e");
        KvrouteServer router = KvrouteServer.start(ProxyConfig.defaults().withPort(0).withPolicy("cache-aware")
            .withAdmin(new AdminConfig(0, "127.0.0.1", "s3cret", false, 1 << 16, Duration.ofSeconds(5),
                Duration.ofSeconds(5)))
            .withModels(new ModelsConfig(Duration.ofSeconds(30), 4, true, Map.of("alias", FakeBackend.DEFAULT_MODEL)))
            .withRouting(routing)
            .withBackendUrls(List.of(engine.uri())))) {
      for (String name : List.of(FakeBackend.DEFAULT_MODEL, "alias")) {
        RawHttp.Response proxied = post(router.port(), "/v1/chat/completions", chat(name, false));
        assertThat(proxied.status()).as("proxy, model %s", name).isEqualTo(400);
        assertThat(proxied.bodyText()).contains("System message required").contains("BadRequestError");
        RawHttp.Response explained = post(router.adminPort(), "/admin/explain", chat(name, false));
        assertThat(explained.status()).as("explain, model %s", name).isEqualTo(400);
        assertThat(explained.bodyText()).contains("System message required").contains("BadRequestError");
        RawHttp.Response ok = post(router.adminPort(), "/admin/explain", chat(name, true));
        assertThat(ok.status()).as("explain with a system message, model %s", name).isEqualTo(200);
        JsonNode tree = JSON.readTree(ok.bodyText());
        // the template's rendering in the model's vocabulary: 2 x (<|im_start|> role words <|im_end|>)
        assertThat(tree.get("promptTokens").asInt()).as("model %s", name).isEqualTo(10);
      }
    }
  }
}
