package dev.kvroute.core.policy;

import static dev.kvroute.core.policy.PolicyTestSupport.b;
import static dev.kvroute.core.policy.PolicyTestSupport.c;
import static dev.kvroute.core.policy.PolicyTestSupport.ctx;
import static dev.kvroute.core.policy.PolicyTestSupport.idle;
import static dev.kvroute.core.policy.PolicyTestSupport.idles;
import static dev.kvroute.core.policy.PolicyTestSupport.inFlight;
import static dev.kvroute.core.policy.PolicyTestSupport.load;
import static dev.kvroute.core.policy.PolicyTestSupport.policy;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.BackendId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class SimplePoliciesTest {

  @Test
  void roundRobinCyclesExactly() {
    RoutingPolicy p = policy("round-robin");
    RoutingContext ctx = new RoutingContext(10, null, 0, idles(3));
    List<String> got = new ArrayList<>();
    for (int i = 0; i < 9; i++) {
      Decision d = p.choose(ctx);
      assertThat(d.rule()).isEqualTo(Rule.ROUND_ROBIN);
      assertThat(d.policy()).isEqualTo("round-robin");
      got.add(d.backend().name());
    }
    assertThat(got).containsExactly("b0", "b1", "b2", "b0", "b1", "b2", "b0", "b1", "b2");
  }

  @Test
  void roundRobinExplainDoesNotAdvance() {
    RoutingPolicy p = policy("round-robin");
    RoutingContext ctx = new RoutingContext(10, null, 0, idles(3));
    p.choose(ctx);
    assertThat(p.explain(ctx).backend()).isEqualTo(b("b1"));
    assertThat(p.explain(ctx).backend()).isEqualTo(b("b1"));
    assertThat(p.choose(ctx).backend()).isEqualTo(b("b1"));
    assertThat(p.choose(ctx).backend()).isEqualTo(b("b2"));
  }

  @Test
  void roundRobinIsExactUnderConcurrency() throws Exception {
    RoutingPolicy p = policy("round-robin");
    RoutingContext ctx = new RoutingContext(10, null, 0, idles(4));
    Map<BackendId, AtomicInteger> counts = new ConcurrentHashMap<>();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    for (int t = 0; t < 4; t++) {
      pool.submit(
          () -> {
            for (int i = 0; i < 1000; i++) {
              counts.computeIfAbsent(p.choose(ctx).backend(), k -> new AtomicInteger())
                  .incrementAndGet();
            }
          });
    }
    pool.shutdown();
    assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    assertThat(counts.values()).extracting(AtomicInteger::get).containsOnly(1000);
  }

  @Test
  void roundRobinStaysFairWhenARetryLeavesTheFailedBackendOut() {
    // b1 always fails and each of its requests is retried on the others: none may be starved
    RoutingPolicy p = policy("round-robin");
    List<Candidate> all = idles(5);
    List<Candidate> withoutB1 = all.stream().filter(x -> !x.backend().name().equals("b1")).toList();
    Map<String, Integer> served = new HashMap<>();
    for (int i = 0; i < 100; i++) {
      Decision d = p.choose(new RoutingContext(10, null, 0, all));
      if (d.backend().name().equals("b1")) {
        d = p.choose(new RoutingContext(10, null, 0, withoutB1));
        assertThat(d.backend().name()).as("the retry goes to the next backend").isEqualTo("b2");
      }
      served.merge(d.backend().name(), 1, Integer::sum);
    }
    assertThat(served).containsOnlyKeys("b0", "b2", "b3", "b4");
    assertThat(served.values()).allSatisfy(n -> assertThat(n).isBetween(20, 30));
  }

  @Test
  void randomCoversAllAndRepeatsWithTheSameSeed() {
    RoutingContext ctx = new RoutingContext(10, null, 0, idles(5));
    RoutingPolicy p1 = policy("random", PolicyConfig.defaults(), 7);
    RoutingPolicy p2 = policy("random", PolicyConfig.defaults(), 7);
    Set<BackendId> seen = new HashSet<>();
    for (int i = 0; i < 200; i++) {
      Decision d = p1.choose(ctx);
      assertThat(p2.choose(ctx).backend()).isEqualTo(d.backend());
      assertThat(d.rule()).isEqualTo(Rule.RANDOM);
      seen.add(d.backend());
    }
    assertThat(seen).hasSize(5);
  }

  @Test
  void explainDoesNotDrawFromTheSharedGenerator() {
    RoutingContext ctx = new RoutingContext(10, null, 0, idles(5));
    RoutingPolicy plain = policy("random", PolicyConfig.defaults(), 3);
    RoutingPolicy explained = policy("random", PolicyConfig.defaults(), 3);
    for (int i = 0; i < 50; i++) {
      explained.explain(ctx);
      assertThat(explained.choose(ctx).backend()).isEqualTo(plain.choose(ctx).backend());
    }
  }

  @Test
  void leastLoadedPicksMinimumAndBreaksTiesAtRandom() {
    RoutingPolicy p = policy("least-loaded");
    RoutingContext ctx =
        ctx(10, c("a", 0, inFlight(3)), c("b", 0, inFlight(1)), c("c", 0, inFlight(2)));
    assertThat(p.choose(ctx).backend()).isEqualTo(b("b"));
    RoutingContext tied =
        ctx(
            10,
            c("a", 0, inFlight(1)),
            c("b", 0, inFlight(5)),
            c("c", 0, inFlight(1)),
            c("d", 0, inFlight(1)));
    Set<BackendId> seen = new HashSet<>();
    for (int i = 0; i < 200; i++) {
      Decision d = p.choose(tied);
      assertThat(d.rule()).isEqualTo(Rule.LEAST_LOADED);
      seen.add(d.backend());
    }
    assertThat(seen).containsExactlyInAnyOrder(b("a"), b("c"), b("d"));
  }

  @Test
  void leastLoadedHonoursTheLoadMeasure() {
    // a: 1 in flight but prefilling; b: 3 in flight, all decoding.
    RoutingContext ctx = ctx(10, c("a", 0, load(1, 500, 1, 0)), c("b", 0, load(3, 0, 0, 3)));
    assertThat(policy("least-loaded").choose(ctx).backend()).isEqualTo(b("a"));
    RoutingPolicy prefilling =
        policy(
            "least-loaded",
            PolicyConfig.defaults().withLoadMeasure(LoadMeasure.PREFILLING_REQUESTS),
            1);
    assertThat(prefilling.choose(ctx).backend()).isEqualTo(b("b"));
  }

  @Test
  void leastLoadedAndPowerOfTwoCountForeignLoadOnlyWhenAsked() {
    // a: this router's 1 request plus 6 foreign; b: 3 of this router's
    RoutingContext ctx = ctx(10, c("a", 0, new dev.kvroute.core.load.BackendLoad(1, 0, 0, 1, 6, 2, -1)),
        c("b", 0, inFlight(3)));
    PolicyConfig foreign = PolicyConfig.defaults().withForeignLoad(true);
    for (String name : new String[] {"least-loaded", "power-of-two"}) {
      assertThat(policy(name).choose(ctx).backend()).as(name).isEqualTo(b("a"));
      assertThat(policy(name, foreign, 1).choose(ctx).backend()).as(name).isEqualTo(b("b"));
    }
  }

  @Test
  void powerOfTwoNeverPicksTheUniqueMostLoaded() {
    RoutingPolicy p = policy("power-of-two");
    RoutingContext ctx =
        ctx(10, c("a", 0, inFlight(0)), c("b", 0, inFlight(9)), c("c", 0, inFlight(1)));
    Map<BackendId, Integer> counts = new HashMap<>();
    for (int i = 0; i < 300; i++) {
      Decision d = p.choose(ctx);
      assertThat(d.rule()).isEqualTo(Rule.POWER_OF_TWO);
      counts.merge(d.backend(), 1, Integer::sum);
    }
    assertThat(counts).doesNotContainKey(b("b")).containsKeys(b("a"), b("c"));
    // a is chosen whenever drawn (2 of 3 pairs), c only against b (1 of 3).
    assertThat(counts.get(b("a"))).isGreaterThan(counts.get(b("c")));
  }

  @Test
  void powerOfTwoWithTwoCandidatesAlwaysTakesTheLessLoadedAndFlipsOnTies() {
    RoutingPolicy p = policy("power-of-two");
    RoutingContext ctx = ctx(10, c("a", 0, inFlight(4)), c("b", 0, inFlight(2)));
    for (int i = 0; i < 50; i++) {
      assertThat(p.choose(ctx).backend()).isEqualTo(b("b"));
    }
    RoutingContext tied = ctx(10, idle("a"), idle("b"));
    Set<BackendId> seen = new HashSet<>();
    for (int i = 0; i < 100; i++) {
      seen.add(p.choose(tied).backend());
    }
    assertThat(seen).hasSize(2);
    assertThat(p.choose(ctx(10, idle("only"))).backend()).isEqualTo(b("only"));
  }

  @Test
  void unknownPolicyNameIsRejected() {
    assertThatThrownBy(() -> policy("fastest"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "policy: fastest (expected: one of round-robin, random, least-loaded, power-of-two,"
                + " sticky, cache-aware, cost)");
  }

  @Test
  void everyNamedPolicyCanBeCreatedAndChoosesACandidate() {
    RoutingContext ctx = new RoutingContext(32, "s", 5, idles(3));
    for (String name : Policies.names()) {
      RoutingPolicy p = Policies.create(name, PolicyConfig.defaults(), new SplittableRandom(1));
      assertThat(p.name()).isEqualTo(name);
      Decision d = p.choose(ctx);
      assertThat(d.candidates()).extracting(Candidate::backend).contains(d.backend());
      assertThat(d.detail()).isNotBlank();
      assertThat(p.explain(ctx).policy()).isEqualTo(name);
    }
    assertThat(Policies.create("oracle", PolicyConfig.defaults(), new SplittableRandom(1)).name())
        .isEqualTo("oracle");
  }
}
