package dev.kvroute.core.policy;

import static dev.kvroute.core.policy.PolicyTestSupport.b;
import static dev.kvroute.core.policy.PolicyTestSupport.c;
import static dev.kvroute.core.policy.PolicyTestSupport.ctx;
import static dev.kvroute.core.policy.PolicyTestSupport.load;
import static dev.kvroute.core.policy.PolicyTestSupport.policy;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class CostPolicyTest {
  // decode token-equivalent 100 keeps the arithmetic readable
  private final PolicyConfig config = PolicyConfig.defaults().withCost(1.0, 1.0, 100);

  @Test
  void cheapestWinsWithDynamoWorkedExampleShape() {
    // prompt 1000. a: uncached 200 + queued 600 + 2 decodes × 100 = 1000
    //              b: uncached 1000 + queued 0 + 0 = 1000 + 0     = 1000 -> tie broken below
    //              c: uncached 100 + queued 300 + 3 × 100         = 700  (cheapest)
    RoutingPolicy p = policy("cost", config, 1);
    Decision d =
        p.choose(
            ctx(
                1000,
                c("a", 800, load(3, 600, 1, 2)),
                c("b", 0, load(0, 0, 0, 0)),
                c("c", 900, load(4, 300, 1, 3))));
    assertThat(d.rule()).isEqualTo(Rule.COST);
    assertThat(d.backend()).isEqualTo(b("c"));
    assertThat(d.detail()).isEqualTo("cost a=1000 b=1000 c=700");
  }

  @Test
  void weightsChangeTheWinner() {
    RoutingContext ctx =
        ctx(1000, c("a", 1000, load(5, 0, 0, 5)), c("b", 0, load(0, 0, 0, 0)));
    // a: 0 prefill + 5 × 100 decode = 500; b: 1000 prefill
    assertThat(policy("cost", config, 1).choose(ctx).backend()).isEqualTo(b("a"));
    // decode weighted 3×: a = 1500 > b = 1000
    assertThat(policy("cost", PolicyConfig.defaults().withCost(1.0, 3.0, 100), 1).choose(ctx).backend())
        .isEqualTo(b("b"));
  }

  @Test
  void aForeignRequestIsChargedAsOneDecode() {
    // a: uncached 0 + 6 foreign requests × 100 = 600; b: uncached 500
    RoutingContext ctx = ctx(500, c("a", 500, new dev.kvroute.core.load.BackendLoad(0, 0, 0, 0, 6, 2, -1)),
        c("b", 0, load(0, 0, 0, 0)));
    Decision d = policy("cost", config.withForeignLoad(true), 1).choose(ctx);
    assertThat(d.detail()).isEqualTo("cost a=600 b=500");
    assertThat(d.backend()).isEqualTo(b("b"));
    // off by default: a costs nothing
    assertThat(policy("cost", config, 1).choose(ctx).detail()).isEqualTo("cost a=0 b=500");
  }

  @Test
  void exactTiesAreBrokenAtRandom() {
    RoutingPolicy p = policy("cost", config, 4);
    RoutingContext ctx =
        ctx(
            100,
            c("a", 0, load(0, 0, 0, 0)),
            c("b", 50, load(1, 50, 1, 0)),
            c("c", 0, load(0, 0, 0, 0)),
            c("d", 0, load(1, 0, 0, 1)));
    Set<BackendId> seen = new HashSet<>();
    for (int i = 0; i < 300; i++) {
      seen.add(p.choose(ctx).backend());
    }
    assertThat(seen).containsExactlyInAnyOrder(b("a"), b("b"), b("c"));
  }
}
