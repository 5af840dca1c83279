package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
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
    SelfWarmUp.Result r = SelfWarmUp.run(real, 600, Duration.ofMinutes(2));
    // every request (JSON and SSE, through parse, tokenize, index, policy and both relays) came back 200
    assertThat(r.requests() + r.probes()).isGreaterThanOrEqualTo(600);
    assertThat(r.failed()).isZero();
    // and one in PROBE_EVERY was a scrape or a probe, answered 200 as well (/metrics, then /health)
    assertThat(r.probes()).isGreaterThanOrEqualTo(600 / SelfWarmUp.PROBE_EVERY);
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
