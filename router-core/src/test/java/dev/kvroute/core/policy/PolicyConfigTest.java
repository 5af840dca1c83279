package dev.kvroute.core.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.load.BackendLoad;
import org.junit.jupiter.api.Test;

class PolicyConfigTest {
  private final PolicyConfig d = PolicyConfig.defaults();

  @Test
  void invalidValuesNameTheFieldAndTheExpectation() {
    assertThatThrownBy(() -> d.withCacheThreshold(1.5))
        .hasMessage("cacheThreshold: 1.5 (expected: 0..1)");
    assertThatThrownBy(() -> d.withCacheThreshold(Double.NaN))
        .hasMessage("cacheThreshold: NaN (expected: 0..1)");
    assertThatThrownBy(() -> d.withBalance(-1, 1.5))
        .hasMessage("balanceAbsThreshold: -1 (expected: >= 0)");
    assertThatThrownBy(() -> d.withBalance(3, 0.5))
        .hasMessage("balanceRelThreshold: 0.5 (expected: a finite number >= 1)");
    assertThatThrownBy(() -> d.withVirtualNodes(0))
        .hasMessage("virtualNodes: 0 (expected: 1..10000)");
    assertThatThrownBy(() -> d.withCost(-1, 1, 1))
        .hasMessage("prefillWeight: -1.0 (expected: a finite number >= 0)");
    assertThatThrownBy(() -> d.withCost(1, Double.POSITIVE_INFINITY, 1))
        .hasMessage("decodeWeight: Infinity (expected: a finite number >= 0)");
    assertThatThrownBy(() -> d.withCost(1, 1, -5))
        .hasMessage("decodeTokensPerRequest: -5 (expected: >= 0)");
  }

  @Test
  void withersChangeOneThing() {
    PolicyConfig c = d.withBalance(3, 1.5).withLoadMeasure(LoadMeasure.PREFILLING_REQUESTS);
    assertThat(c.balanceAbsThreshold()).isEqualTo(3);
    assertThat(c.cacheThreshold()).isEqualTo(d.cacheThreshold());
    assertThat(c.loadMeasure()).isEqualTo(LoadMeasure.PREFILLING_REQUESTS);
  }

  @Test
  void loadMeasureNamesAndValues() {
    assertThat(LoadMeasure.fromName("in-flight")).isEqualTo(LoadMeasure.IN_FLIGHT_REQUESTS);
    assertThat(LoadMeasure.fromName("PREFILLING_REQUESTS")).isEqualTo(LoadMeasure.PREFILLING_REQUESTS);
    assertThatThrownBy(() -> LoadMeasure.fromName("kv"))
        .hasMessage("loadMeasure: kv (expected: in-flight or prefilling)");
    BackendLoad l = new BackendLoad(5, 100, 2, 3);
    assertThat(LoadMeasure.IN_FLIGHT_REQUESTS.of(l)).isEqualTo(5);
    assertThat(LoadMeasure.PREFILLING_REQUESTS.of(l)).isEqualTo(2);
  }

  @Test
  void leadHashCoversOnlyTheLeadingTokens() {
    int[] a = {1, 2, 3, 4, 5, 6};
    int[] b = {1, 2, 3, 4, 9, 9};
    assertThat(RoutingContext.leadHash(a, 4)).isEqualTo(RoutingContext.leadHash(b, 4));
    assertThat(RoutingContext.leadHash(a, 5)).isNotEqualTo(RoutingContext.leadHash(b, 5));
    assertThat(RoutingContext.leadHash(new int[] {1, 2}, 16))
        .isNotEqualTo(RoutingContext.leadHash(new int[] {1, 2, 3}, 16));
    assertThatThrownBy(() -> RoutingContext.leadHash(a, 0))
        .hasMessage("leadTokens: 0 (expected: >= 1)");
  }
}
