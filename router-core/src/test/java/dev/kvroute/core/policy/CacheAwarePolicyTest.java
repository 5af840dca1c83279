package dev.kvroute.core.policy;

import static dev.kvroute.core.policy.PolicyTestSupport.b;
import static dev.kvroute.core.policy.PolicyTestSupport.c;
import static dev.kvroute.core.policy.PolicyTestSupport.ctx;
import static dev.kvroute.core.policy.PolicyTestSupport.inFlight;
import static dev.kvroute.core.policy.PolicyTestSupport.load;
import static dev.kvroute.core.policy.PolicyTestSupport.policy;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.BackendLoad;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CacheAwarePolicyTest {
  private final RoutingPolicy p = policy("cache-aware");

  @Test
  void defaultsAreSglangCliValues() {
    PolicyConfig d = PolicyConfig.defaults();
    assertThat(d.cacheThreshold()).isEqualTo(0.3);
    assertThat(d.balanceAbsThreshold()).isEqualTo(64);
    assertThat(d.balanceRelThreshold()).isEqualTo(1.5);
    assertThat(d.loadMeasure()).isEqualTo(LoadMeasure.IN_FLIGHT_REQUESTS);
  }

  @Test
  void cacheHitTakesTheLongestMatchEvenWhenBusier() {
    Decision d =
        p.choose(ctx(1000, c("a", 800, inFlight(30)), c("b", 100, inFlight(0)), c("c", 0, inFlight(2))));
    assertThat(d.rule()).isEqualTo(Rule.CACHE_HIT);
    assertThat(d.backend()).isEqualTo(b("a"));
    assertThat(d.matchedTokens()).isEqualTo(800);
    assertThat(d.detail()).contains("best match 800/1000 = 0.8 > 0.3");
  }

  @Test
  void cacheMissTakesTheLeastLoaded() {
    Decision d =
        p.choose(ctx(1000, c("a", 200, inFlight(5)), c("b", 0, inFlight(1)), c("c", 0, inFlight(3))));
    assertThat(d.rule()).isEqualTo(Rule.CACHE_MISS);
    assertThat(d.backend()).isEqualTo(b("b"));
  }

  @Test
  void thresholdIsStrict() {
    // exactly 0.3 is not above the threshold
    Decision d = p.choose(ctx(1000, c("a", 300, inFlight(5)), c("b", 0, inFlight(1))));
    assertThat(d.rule()).isEqualTo(Rule.CACHE_MISS);
    assertThat(d.backend()).isEqualTo(b("b"));
    Decision just = p.choose(ctx(1000, c("a", 301, inFlight(5)), c("b", 0, inFlight(1))));
    assertThat(just.rule()).isEqualTo(Rule.CACHE_HIT);
  }

  @Test
  void imbalanceOverridesTheCache() {
    // max - min = 68 > 64 and 70 > 1.5 × 2
    Decision d =
        p.choose(ctx(1000, c("a", 1000, inFlight(70)), c("b", 0, inFlight(2)), c("c", 0, inFlight(5))));
    assertThat(d.rule()).isEqualTo(Rule.IMBALANCE);
    assertThat(d.backend()).isEqualTo(b("b"));
  }

  @Test
  void imbalanceNeedsBothThresholds() {
    // abs exceeded (65 > 64) but 200 <= 1.5 × 135
    Decision rel = p.choose(ctx(1000, c("a", 900, inFlight(200)), c("b", 0, inFlight(135))));
    assertThat(rel.rule()).isEqualTo(Rule.CACHE_HIT);
    assertThat(rel.backend()).isEqualTo(b("a"));
    // rel exceeded (64 > 1.5 × 0) but abs not (64 is not > 64)
    Decision abs = p.choose(ctx(1000, c("a", 900, inFlight(64)), c("b", 0, inFlight(0))));
    assertThat(abs.rule()).isEqualTo(Rule.CACHE_HIT);
  }

  private final RoutingPolicy withForeign = policy("cache-aware", PolicyConfig.defaults().withForeignLoad(true), 1);

  @Test
  void foreignLoadPlacesRequestsButDoesNotSwitchTheRule() {
    RoutingPolicy p = withForeign;
    // this router sent nothing anywhere, but others keep 80 requests (20 waiting) on a
    BackendLoad foreign = new BackendLoad(0, 0, 0, 0, 80, 20, 0.9);
    // a cache hit on a stays a hit: the router's own loads are balanced
    Decision hit = p.choose(ctx(1000, c("a", 900, foreign), c("b", 0, BackendLoad.IDLE)));
    assertThat(hit.rule()).isEqualTo(Rule.CACHE_HIT);
    assertThat(hit.backend()).isEqualTo(b("a"));
    // a miss goes to the least loaded counting the foreign load, in either measure
    Decision miss = p.choose(ctx(1000, c("a", 0, foreign), c("b", 0, inFlight(3))));
    assertThat(miss.rule()).isEqualTo(Rule.CACHE_MISS);
    assertThat(miss.backend()).isEqualTo(b("b"));
    assertThat(miss.detail()).contains("load max 3 min 0").endsWith("least loaded counts 80 engine-reported foreign");
    PolicyConfig seed = PolicyConfig.defaults().withBalance(3, 1.5)
        .withLoadMeasure(LoadMeasure.PREFILLING_REQUESTS).withForeignLoad(true);
    assertThat(policy("cache-aware", seed, 1)
        .choose(ctx(1000, c("a", 0, foreign), c("b", 0, load(2, 0, 2, 0)))).backend()).isEqualTo(b("b"));
    // by default (or without the report) a looks idle and takes the miss
    assertThat(this.p.choose(ctx(1000, c("a", 0, foreign), c("b", 0, inFlight(3)))).backend()).isEqualTo(b("a"));
    assertThat(p.choose(ctx(1000, c("a", 0, BackendLoad.IDLE), c("b", 0, inFlight(3)))).backend())
        .isEqualTo(b("a"));
  }

  @Test
  void ownImbalanceSwitchesTheRuleAndThePickCountsForeignLoad() {
    // own loads 70 / 0 / 2 are imbalanced; b's 100 foreign requests make c the least loaded
    Decision d = withForeign.choose(ctx(1000, c("a", 1000, inFlight(70)),
        c("b", 0, new BackendLoad(0, 0, 0, 0, 100, 0, -1)), c("c", 0, inFlight(2))));
    assertThat(d.rule()).isEqualTo(Rule.IMBALANCE);
    assertThat(d.backend()).isEqualTo(b("c"));
  }

  @Test
  void prefillingMeasureWithSeedThresholds() {
    PolicyConfig seed =
        PolicyConfig.defaults().withBalance(3, 1.5).withLoadMeasure(LoadMeasure.PREFILLING_REQUESTS);
    RoutingPolicy seedPolicy = policy("cache-aware", seed, 1);
    // a holds the prompt but has 4 queued prefills; b has none (but many decodes)
    RoutingContext ctx = ctx(1000, c("a", 900, load(4, 4000, 4, 0)), c("b", 0, load(5, 0, 0, 5)));
    Decision d = seedPolicy.choose(ctx);
    assertThat(d.rule()).isEqualTo(Rule.IMBALANCE);
    assertThat(d.backend()).isEqualTo(b("b"));
    // by in-flight requests the same loads are balanced, and a's match wins
    RoutingPolicy inFlight = policy("cache-aware", seed.withLoadMeasure(LoadMeasure.IN_FLIGHT_REQUESTS), 1);
    assertThat(inFlight.choose(ctx).rule()).isEqualTo(Rule.CACHE_HIT);
  }

  @Test
  void tiedLongestMatchesGoToTheLeastLoadedThenAtRandom() {
    RoutingContext ctx =
        ctx(
            100,
            c("a", 64, inFlight(3)),
            c("b", 64, inFlight(1)),
            c("c", 64, inFlight(1)),
            c("d", 64, inFlight(1)),
            c("e", 16, inFlight(0)));
    Set<BackendId> seen = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      Decision d = p.choose(ctx);
      assertThat(d.rule()).isEqualTo(Rule.CACHE_HIT);
      seen.add(d.backend());
    }
    assertThat(seen).containsExactlyInAnyOrder(b("b"), b("c"), b("d"));
  }

  @Test
  void missTiesGoToTheLongestMatchThenAtRandom() {
    // all equally loaded, nobody above threshold: every idle backend is taken sometimes
    RoutingContext ctx =
        ctx(1000, c("a", 0, inFlight(0)), c("b", 0, inFlight(0)), c("c", 0, inFlight(0)), c("d", 0, inFlight(1)));
    Set<BackendId> seen = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      seen.add(p.choose(ctx).backend());
    }
    assertThat(seen).containsExactlyInAnyOrder(b("a"), b("b"), b("c"));
    // a partial match breaks a least-loaded tie
    RoutingContext partial = ctx(1000, c("a", 0, inFlight(0)), c("b", 16, inFlight(0)), c("c", 0, inFlight(0)));
    for (int i = 0; i < 20; i++) {
      assertThat(p.choose(partial).backend()).isEqualTo(b("b"));
    }
  }

  @Test
  void emptyPromptIsAMiss() {
    Decision d = p.choose(ctx(0, c("a", 0, inFlight(1)), c("b", 0, inFlight(0))));
    assertThat(d.rule()).isEqualTo(Rule.CACHE_MISS);
    assertThat(d.backend()).isEqualTo(b("b"));
  }

  @Test
  void matchesBeyondThePromptAreCapped() {
    Decision d = p.choose(ctx(10, c("a", 99, inFlight(0)), c("b", 10, inFlight(0))));
    assertThat(d.rule()).isEqualTo(Rule.CACHE_HIT);
    assertThat(d.detail()).contains("best match 10/10");
  }

  @Test
  void oracleIsTheSameRule() {
    RoutingPolicy oracle = policy("oracle");
    Decision d = oracle.choose(ctx(1000, c("a", 800, inFlight(30)), c("b", 100, inFlight(0))));
    assertThat(d.policy()).isEqualTo("oracle");
    assertThat(d.rule()).isEqualTo(Rule.CACHE_HIT);
    assertThat(d.backend()).isEqualTo(b("a"));
  }
}
