package dev.kvroute.core.policy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.BackendLoad;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/** Builders for policy tests. */
final class PolicyTestSupport {
  private PolicyTestSupport() {}

  static BackendId b(String name) {
    return BackendId.of(name);
  }

  static BackendLoad inFlight(int requests) {
    return new BackendLoad(requests, 0, 0, requests);
  }

  static BackendLoad load(int inFlight, long prefillTokens, int prefilling, int decodes) {
    return new BackendLoad(inFlight, prefillTokens, prefilling, decodes);
  }

  static Candidate c(String name, int matched, BackendLoad load) {
    return new Candidate(b(name), matched, load);
  }

  static Candidate idle(String name) {
    return c(name, 0, BackendLoad.IDLE);
  }

  static RoutingContext ctx(int promptTokens, Candidate... cs) {
    return new RoutingContext(promptTokens, null, 0L, List.of(cs));
  }

  static List<Candidate> idles(int n) {
    List<Candidate> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(idle("b" + i));
    }
    return out;
  }

  static RoutingPolicy policy(String name, PolicyConfig config, long seed) {
    return Policies.create(name, config, new SplittableRandom(seed));
  }

  static RoutingPolicy policy(String name) {
    return policy(name, PolicyConfig.defaults(), 1);
  }
}
