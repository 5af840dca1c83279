package dev.kvroute.proxy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.policy.LoadMeasure;
import dev.kvroute.core.policy.PolicyConfig;
import java.net.URI;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class ConfigLoaderTest {

  @Test
  void emptyYamlGivesDefaultsWithTheApproximateIndexsPage() {
    ProxyConfig defaults = ProxyConfig.defaults();
    assertThat(defaults.index().mode()).isEqualTo("approximate");
    assertThat(defaults.routing().pageSizeTokens()).isEqualTo(16);
    assertThat(ConfigLoader.parse("", Map.of())).isEqualTo(
        defaults.withRouting(defaults.routing().withPageSizeTokens(RoutingConfig.APPROXIMATE_PAGE_SIZE_TOKENS)));
    assertThat(RoutingConfig.APPROXIMATE_PAGE_SIZE_TOKENS).isEqualTo(64);
  }

  @Test
  void thePagesDefaultFollowsTheIndexModeUnlessGiven() {
    assertThat(ConfigLoader.parse("index:\n  mode: precise\n", Map.of()).routing().pageSizeTokens()).isEqualTo(16);
    assertThat(ConfigLoader.parse("", Map.of("index.mode", "hybrid")).routing().pageSizeTokens()).isEqualTo(16);
    // the flag wins over the file's mode, and the page follows the mode in effect
    assertThat(ConfigLoader.parse("index:\n  mode: precise\n", Map.of("index.mode", "approximate"))
        .routing().pageSizeTokens()).isEqualTo(64);
    // a page given in the file or by a flag is kept, even when it is the library default
    assertThat(ConfigLoader.parse("routing:\n  pageSizeTokens: 16\n", Map.of()).routing().pageSizeTokens())
        .isEqualTo(16);
    assertThat(ConfigLoader.parse("", Map.of("routing.pageSizeTokens", 32)).routing().pageSizeTokens())
        .isEqualTo(32);
    assertThat(ConfigLoader.parse("routing:\n  pageSizeTokens: 128\n", Map.of("index.mode", "precise"))
        .routing().pageSizeTokens()).isEqualTo(128);
  }

  @Test
  void defaultsRoundTripThroughYaml() {
    ProxyConfig config = ProxyConfig.defaults()
        .withBackends(List.of(BackendConfig.parse("http://10.0.0.5:8000,name=gpu-0,capacityTokens=1000")));
    String yaml = ConfigLoader.toYaml(config);
    assertThat(ConfigLoader.parse(yaml, Map.of())).isEqualTo(config);
  }

  @Test
  void yamlOverridesDefaultsKeyByKey() {
    String yaml = String.join("\n",
        "port: 9000",
        "backends:",
        "  - url: http://10.0.0.5:8000",
        "    capacityTokens: 262144",
        "  - http://10.0.0.6:8000/serving,name=b",
        "policy:",
        "  name: round-robin",
        "timeouts:",
        "  connect: 250ms",
        "");
    ProxyConfig c = ConfigLoader.parse(yaml, Map.of());
    assertThat(c.port()).isEqualTo(9000);
    assertThat(c.backends()).hasSize(2);
    assertThat(c.backends().get(0).name()).isEqualTo("10.0.0.5:8000");
    assertThat(c.backends().get(0).capacityTokens()).isEqualTo(262144);
    assertThat(c.backends().get(1).name()).isEqualTo("b");
    assertThat(c.backends().get(1).basePath()).isEqualTo("/serving");
    assertThat(c.policy().name()).isEqualTo("round-robin");
    assertThat(c.policy().cacheThreshold()).isEqualTo(PolicyConfig.defaults().cacheThreshold());
    assertThat(c.timeouts().connect()).isEqualTo(Duration.ofMillis(250));
    assertThat(c.timeouts().idle()).isEqualTo(TimeoutConfig.defaults().idle());
  }

  @Test
  void overridesWinOverTheFile() {
    Map<String, Object> flags = new LinkedHashMap<>();
    flags.put("port", 7000);
    flags.put("timeouts.firstByte", "10s");
    flags.put("backends", List.of("http://127.0.0.1:1234"));
    flags.put("admin.token", null);
    ProxyConfig c = ConfigLoader.parse("port: 9000\ntimeouts:\n  firstByte: 1m\n", flags);
    assertThat(c.port()).isEqualTo(7000);
    assertThat(c.timeouts().firstByte()).isEqualTo(Duration.ofSeconds(10));
    assertThat(c.backends()).extracting(BackendConfig::url).containsExactly(URI.create("http://127.0.0.1:1234"));
  }

  @Test
  void outOfRangeValueNamesThePathValueAndExpectation() {
    assertThatThrownBy(() -> ConfigLoader.parse("timeouts:\n  connect: 0s\n", Map.of()))
        .isInstanceOf(ConfigException.class)
        .hasMessage("timeouts.connect: 0s (expected: > 0)");
    assertThatThrownBy(() -> ConfigLoader.parse("port: 70000\n", Map.of()))
        .hasMessage("port: 70000 (expected: 0 (ephemeral) or 1..65535)");
    assertThatThrownBy(() -> ConfigLoader.parse("policy:\n  cacheThreshold: 2\n", Map.of()))
        .hasMessage("policy.cacheThreshold: 2.0 (expected: 0..1)");
  }

  @Test
  void unknownTokenizerIsOneLineWithoutJacksonWrapping() {
    assertThatThrownBy(() -> ConfigLoader.parse("routing:\n  tokenizer: nope\n", Map.of()))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("routing.tokenizer: nope (expected: ")
        .hasMessageNotContaining("Cannot construct")
        .hasMessageNotContaining("RoutingConfig");
  }

  @Test
  void unknownKeyListsTheKnownOnes() {
    assertThatThrownBy(() -> ConfigLoader.parse("timeouts:\n  conect: 1s\n", Map.of()))
        .hasMessage("timeouts.conect: unknown key (expected one of: client, connect, drain, firstByte, idle)");
  }

  @Test
  void durationWithoutUnitIsRejected() {
    assertThatThrownBy(() -> ConfigLoader.parse("timeouts:\n  idle: 30\n", Map.of()))
        .hasMessageStartingWith("timeouts.idle: 30 (expected: a duration");
    assertThatThrownBy(() -> ConfigLoader.parse("timeouts:\n  idle: soon\n", Map.of()))
        .hasMessageStartingWith("timeouts.idle: \"soon\" (expected: a duration");
  }

  @Test
  void wrongTypeNamesTheExpectedType() {
    assertThatThrownBy(() -> ConfigLoader.parse("port: eighty\n", Map.of()))
        .hasMessage("port: eighty (expected: a whole number)");
  }

  @Test
  void badBackendIsReportedWithItsIndex() {
    assertThatThrownBy(() -> ConfigLoader.parse("backends:\n  - url: https://x:1\n", Map.of()))
        .hasMessage("backends[0].url: https://x:1 (expected: an http://host[:port][/path] URL)");
    assertThatThrownBy(() -> ConfigLoader.parse("backends:\n  - http://x:1\n  - http://x:1\n", Map.of()))
        .hasMessage("backends: duplicate name x:1 (expected: unique names)");
  }

  @Test
  void durationsParseAndFormat() {
    assertThat(Durations.parse("1500ms")).isEqualTo(Duration.ofMillis(1500));
    assertThat(Durations.parse("PT2S")).isEqualTo(Duration.ofSeconds(2));
    assertThat(Durations.format(Duration.ofMillis(1500))).isEqualTo("1500ms");
    assertThat(Durations.format(Duration.ofMinutes(2))).isEqualTo("2m");
  }

  @Test
  void policyBlockBindsRouterCoresRecordWithLoadMeasureByName() {
    PolicyConfig p = ConfigLoader.parse(
        "policy:\n  name: sticky\n  loadMeasure: prefilling\n  balanceAbsThreshold: 3\n  seed: 7\n", Map.of())
        .policy();
    assertThat(p).isEqualTo(PolicyConfig.defaults().withName("sticky").withBalance(3, 1.5)
        .withLoadMeasure(LoadMeasure.PREFILLING_REQUESTS).withSeed(7));
    assertThat(ConfigLoader.toYaml(ProxyConfig.defaults().withPolicy(p)))
        .contains("loadMeasure: prefilling").contains("name: sticky").contains("seed: 7");
    assertThatThrownBy(() -> ConfigLoader.parse("policy:\n  loadMeasure: kv\n", Map.of()))
        .hasMessage("policy.loadMeasure: kv (expected: in-flight or prefilling)");
    assertThatThrownBy(() -> ConfigLoader.parse("policy:\n  name: \"\"\n", Map.of()))
        .hasMessage("policy.name: \"\" (expected: a non-blank string)");
  }

  @Test
  void indexModeAndKvEventEndpointsFromYamlAndFlags() {
    String yaml = String.join("\n",
        "index:",
        "  mode: hybrid",
        "  kvEventsReplayPort: 5558",
        "  speculativeTtl: 500ms",
        "backends:",
        "  - url: http://10.0.0.5:8000",
        "    kvEvents: tcp://10.0.0.5:6000",
        "  - http://10.0.0.6:8000,kvEvents=tcp://10.0.0.6:6001,kvEventsReplay=tcp://10.0.0.6:6002",
        "");
    ProxyConfig c = ConfigLoader.parse(yaml, Map.of("index.staleAfter", "10s"));
    assertThat(c.index().mode()).isEqualTo("hybrid");
    assertThat(c.index().kvEventsReplayPort()).isEqualTo(5558);
    assertThat(c.index().speculativeTtl()).isEqualTo(java.time.Duration.ofMillis(500));
    assertThat(c.index().staleAfter()).isEqualTo(java.time.Duration.ofSeconds(10));
    assertThat(c.backends().get(0).kvEvents()).hasToString("tcp://10.0.0.5:6000");
    assertThat(c.backends().get(0).kvEventsReplay()).isNull();
    assertThat(c.backends().get(1).kvEventsReplay()).hasToString("tcp://10.0.0.6:6002");
    assertThat(ConfigLoader.parse(ConfigLoader.toYaml(c), Map.of())).isEqualTo(c);
  }

  @Test
  void badIndexSettingsSayWhatWasExpected() {
    assertThatThrownBy(() -> ConfigLoader.parse("index:\n  mode: exact\n", Map.of()))
        .isInstanceOf(ConfigException.class)
        .hasMessage("index.mode: exact (expected: approximate, precise or hybrid)");
    assertThatThrownBy(() -> BackendConfig.parse("http://10.0.0.5:8000,kvEvents=http://10.0.0.5:5557"))
        .hasMessageContaining("kvEvents: http://10.0.0.5:5557 (expected: tcp://HOST:PORT");
    assertThatThrownBy(() -> ConfigLoader.parse("index:\n  staleAfter: 0s\n", Map.of()))
        .hasMessage("index.staleAfter: 0s (expected: > 0)");
  }

  @Test
  void aBackendNameWithWhitespaceAtAnEndIsRefused() {
    // it is the x-kvroute-backend header's value, which cannot begin or end with whitespace
    for (String name : List.of(" lead", "trail ")) {
      assertThatThrownBy(() -> new BackendConfig(URI.create("http://10.0.0.5:8000"), name, 0))
          .as(name).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no whitespace at either end");
    }
    assertThat(new BackendConfig(URI.create("http://10.0.0.5:8000"), "gpu 0", 0).name()).isEqualTo("gpu 0");
  }

  @Test
  void aBackendMayNotTakeTheNameOfRequestsThatReachedNone() {
    assertThatThrownBy(() -> new BackendConfig(URI.create("http://10.0.0.5:8000"), "none", 0))
        .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("name: none (expected: another name");
    assertThat(new BackendConfig(URI.create("http://10.0.0.5:8000"), "none-1", 0).name()).isEqualTo("none-1");
  }
}
