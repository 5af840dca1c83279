package dev.kvroute.core.policy;

import static dev.kvroute.core.policy.PolicyTestSupport.b;
import static dev.kvroute.core.policy.PolicyTestSupport.idle;
import static dev.kvroute.core.policy.PolicyTestSupport.idles;
import static dev.kvroute.core.policy.PolicyTestSupport.policy;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class StickyPolicyTest {
  private static final int KEYS = 4000;

  private static Map<String, BackendId> assign(RoutingPolicy p, List<Candidate> cs) {
    Map<String, BackendId> out = new HashMap<>();
    for (int k = 0; k < KEYS; k++) {
      String key = "session-" + k;
      Decision d = p.choose(new RoutingContext(100, key, 0, cs));
      assertThat(d.rule()).isEqualTo(Rule.STICKY);
      out.put(key, d.backend());
    }
    return out;
  }

  @Test
  void sameKeyAlwaysSameBackendWhateverTheCandidateOrder() {
    RoutingPolicy p = policy("sticky");
    List<Candidate> cs = new ArrayList<>(idles(6));
    BackendId first = p.choose(new RoutingContext(100, "alice", 0, cs)).backend();
    Random shuffle = new Random(5);
    for (int i = 0; i < 20; i++) {
      Collections.shuffle(cs, shuffle);
      assertThat(p.choose(new RoutingContext(100, "alice", 0, cs)).backend()).isEqualTo(first);
    }
    // a fresh policy with another seed agrees: the ring depends only on backend names
    assertThat(policy("sticky", PolicyConfig.defaults(), 99).choose(new RoutingContext(100, "alice", 0, cs)).backend())
        .isEqualTo(first);
  }

  @Test
  void keysSpreadOverAllBackends() {
    Map<String, BackendId> a = assign(policy("sticky"), idles(8));
    Map<BackendId, Integer> perBackend = new HashMap<>();
    a.values().forEach(x -> perBackend.merge(x, 1, Integer::sum));
    assertThat(perBackend).hasSize(8);
    // 160 virtual nodes keep every share within ±35% of the mean (500)
    assertThat(perBackend.values()).allSatisfy(n -> assertThat(n).isBetween(325, 675));
  }

  @Test
  void backendLeavingMovesOnlyItsKeysAndRejoiningRestoresThem() {
    RoutingPolicy p = policy("sticky");
    List<Candidate> all = idles(5);
    Map<String, BackendId> before = assign(p, all);
    List<Candidate> without = new ArrayList<>(all);
    without.remove(2);
    Map<String, BackendId> after = assign(p, without);
    int moved = 0;
    for (String key : before.keySet()) {
      if (before.get(key).equals(b("b2"))) {
        assertThat(after.get(key)).isNotEqualTo(b("b2"));
        moved++;
      } else {
        assertThat(after.get(key)).isEqualTo(before.get(key));
      }
    }
    assertThat(moved).isPositive();
    assertThat(assign(p, all)).isEqualTo(before);
  }

  @Test
  void withoutSessionKeyTheFirstPageHashDecides() {
    RoutingPolicy p = policy("sticky");
    List<Candidate> cs = idles(8);
    Map<BackendId, Integer> perBackend = new HashMap<>();
    for (long h = 0; h < 400; h++) {
      Decision d = p.choose(new RoutingContext(100, null, h, cs));
      assertThat(p.choose(new RoutingContext(57, null, h, cs)).backend()).isEqualTo(d.backend());
      assertThat(d.detail()).isEqualTo("by first-page hash");
      perBackend.merge(d.backend(), 1, Integer::sum);
    }
    assertThat(perBackend).hasSize(8);
  }

  @Test
  void singleCandidateIsChosen() {
    assertThat(policy("sticky").choose(new RoutingContext(1, "k", 0, List.of(idle("x")))).backend())
        .isEqualTo(b("x"));
  }
}
