package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(NettyLeakExtension.class)
final class SelfWarmUpTest {

  @Test
  void answersTheRequestsThroughAThrowawayProxyInFrontOfZeroCostBackends() {
    ProxyConfig real = ProxyConfig.defaults()
        .withBackendUrls(List.of(URI.create("http://127.0.0.1:9")))
        .withPort(0)
        .withAdminPort(-1);
    // ended by the count alone (each phase's JIT quiet is the product's, not this test's; on a busy
    // machine it can take the whole two minutes)
    SelfWarmUp.Result r = SelfWarmUp.run(real, 600, Duration.ofMinutes(2), () -> new JitQuiet(null, null));
    // every request (JSON and SSE, through parse, tokenize, index, policy and both relays) came back 200
    // both phases: 600 on the first throwaway proxy, 150 on the fresh one
    assertThat(r.requests() + r.probes()).isGreaterThanOrEqualTo(750);
    assertThat(r.failed()).isZero();
    // and one in PROBE_EVERY was a scrape or a probe, answered 200 as well (/metrics, then /health)
    assertThat(r.probes()).isGreaterThanOrEqualTo(600 / SelfWarmUp.PROBE_EVERY);
  }

  @Test
  void theBodiesAreWrittenAsClientsWriteThemAndANewMessageGoesLast() throws Exception {
    ObjectMapper json = new ObjectMapper();
    List<SelfWarmUp.WarmUpBody> bodies = SelfWarmUp.bodies();
    assertThat(bodies).hasSize(64);
    int spaced = 0;
    int streamed = 0;
    int noStream = 0;
    for (SelfWarmUp.WarmUpBody b : bodies) {
      String text = new String(b.bytes(), StandardCharsets.UTF_8);
      JsonNode root = json.readTree(b.bytes());
      assertThat(text.contains("\"messages\": [")).isEqualTo(b.spaced());
      spaced += b.spaced() ? 1 : 0;
      streamed += root.path("stream").asBoolean() ? 1 : 0;
      noStream += root.has("stream") ? 0 : 1;
      JsonNode messages = root.get("messages");
      JsonNode grown = json.readTree(SelfWarmUp.withNewMessage(b, 7));
      // the same body with one user message more, at the end, spaced as the rest
      assertThat(grown.get("messages")).hasSize(messages.size() + 1);
      assertThat(grown.get("messages").get(messages.size()).get("role").asText()).isEqualTo("user");
      com.fasterxml.jackson.databind.node.ObjectNode grownRest = (com.fasterxml.jackson.databind.node.ObjectNode) grown;
      com.fasterxml.jackson.databind.node.ObjectNode rest = root.deepCopy();
      grownRest.remove("messages");
      rest.remove("messages");
      assertThat(grownRest.equals(rest)).as("fields other than messages").isTrue();
      assertThat(new String(SelfWarmUp.withNewMessage(b, 7), StandardCharsets.UTF_8).contains("}, {\"role\": \"user\""))
          .isEqualTo(b.spaced());
    }
    assertThat(spaced).isEqualTo(32);
    assertThat(streamed).isEqualTo(16);
    assertThat(noStream).isEqualTo(32);
    // later turns of a session extend its earlier ones (the conversation comes back)
    String first = json.readTree(bodies.get(4).bytes()).get("messages").toString();
    String second = json.readTree(bodies.get(5).bytes()).get("messages").toString();
    assertThat(second).startsWith(first.substring(0, first.length() - 1));
  }

  @Test
  void resendsHitEveryBodyAndOneRequestInColdEveryIsRoutedOffTheLoop() throws Exception {
    ObjectMapper json = new ObjectMapper();
    List<SelfWarmUp.WarmUpBody> bodies = SelfWarmUp.bodies();
    java.util.Set<Integer> resent = new java.util.HashSet<>();
    int cold = 0;
    int extended = 0;
    int requests = 3 * SelfWarmUp.COLD_EVERY * bodies.size();
    for (long n = 0; n < requests; n++) {
      byte[] body = SelfWarmUp.body(bodies, n);
      int same = -1;
      for (int i = 0; i < bodies.size(); i++) {
        if (java.util.Arrays.equals(bodies.get(i).bytes(), body)) {
          same = i;
        }
      }
      if (n % 3 == 0) {
        assertThat(same).as("request %d is a body sent again", n).isNotNegative();
        resent.add(same);
        continue;
      }
      assertThat(same).as("request %d brings a new message", n).isNegative();
      JsonNode messages = json.readTree(body).get("messages");
      if (n % 3 == 2) { // the conversation of request n - 1 goes on: its messages, then one more
        JsonNode before = json.readTree(SelfWarmUp.body(bodies, n - 1)).get("messages");
        assertThat(messages.size()).isEqualTo(before.size() + 1);
        for (int i = 0; i < before.size(); i++) {
          assertThat(messages.get(i)).isEqualTo(before.get(i));
        }
        extended++;
      }
      String last = messages.get(messages.size() - 1).get("content").asText();
      int codePoints = last.codePointCount(0, last.length());
      if (codePoints >= ProxyHandler.COLD_TEXT_CODE_POINTS) {
        cold++;
      } else {
        assertThat(codePoints).as("a short new message").isLessThan(1_000);
      }
    }
    // the resends are spread over the bodies, not the cycle's order: every body comes back
    assertThat(resent).hasSize(bodies.size());
    assertThat(extended).isEqualTo(requests / 3);
    // one in COLD_EVERY of the requests bringing a new message to a body has one long enough to be
    // routed off the event loop
    long expectedCold = java.util.stream.LongStream.range(0, requests)
        .filter(n -> n % 3 == 1 && n % SelfWarmUp.COLD_EVERY == 1).count();
    assertThat(cold).isEqualTo((int) expectedCold).isGreaterThan(requests / SelfWarmUp.COLD_EVERY / 4);
  }

  @Test
  void theThrowawayProxyListensOnLoopbackOnlyAndReachesNoRealBackend() {
    ProxyConfig real = ProxyConfig.defaults()
        .withBackendUrls(List.of(URI.create("http://10.1.2.3:8000")))
        .withMockBackends(0);
    ProxyConfig warm = SelfWarmUp.throwaway(real,
        List.of(URI.create("http://127.0.0.1:4567"), URI.create("http://127.0.0.1:4568")));
    assertThat(warm.bind()).isEqualTo("127.0.0.1");
    assertThat(warm.port()).isZero();
    assertThat(warm.admin().enabled()).isFalse();
    assertThat(warm.discovery().enabled()).isFalse();
    assertThat(warm.index().usesEvents()).isFalse();
    assertThat(warm.backends()).extracting(BackendConfig::url)
        .containsExactly(URI.create("http://127.0.0.1:4567"), URI.create("http://127.0.0.1:4568"));
    assertThat(warm.policy()).isEqualTo(real.policy());
    assertThat(warm.routing().tokenizer()).isEqualTo(real.routing().tokenizer());
    assertThat(warm.routing().pageSizeTokens()).isEqualTo(real.routing().pageSizeTokens());
  }

  @Test
  void aColdWarmUpFellBackFromTheEngineTokenizerAndLoggedAWarnNamingWarmUpBackends() {
    ProxyConfig real = ProxyConfig.defaults()
        .withBackendUrls(List.of(URI.create("http://10.1.2.3:8000")))
        .withMockBackends(0);
    real = real.withRouting(real.routing().withEngineTokenizer(Duration.ofMillis(200), 0.5));
    ProxyConfig warm = SelfWarmUp.throwaway(real, List.of(URI.create("http://127.0.0.1:4567")));
    assertThat(warm.routing().tokenizerTimeout()).isEqualTo(SelfWarmUp.WARM_UP_TOKENIZE_DEADLINE);
    assertThat(warm.routing().tokenizerReuse()).isEqualTo(0.5);
    ProxyConfig slow = real.withRouting(real.routing().withEngineTokenizer(Duration.ofSeconds(30), 0.5));
    assertThat(SelfWarmUp.throwaway(slow, List.of(URI.create("http://127.0.0.1:4567"))).routing().tokenizerTimeout())
        .isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void zeroRequestsIsNoWarmUpAndBadArgumentsAreRefused() {
    assertThat(SelfWarmUp.run(ProxyConfig.defaults(), 0, Duration.ofSeconds(1)).requests()).isZero();
    assertThatThrownBy(() -> SelfWarmUp.run(ProxyConfig.defaults(), -1, Duration.ofSeconds(1)))
        .hasMessageContaining("requests: -1");
    assertThatThrownBy(() -> SelfWarmUp.run(ProxyConfig.defaults(), 1, Duration.ZERO))
        .hasMessageContaining("maxTime");
  }
}
