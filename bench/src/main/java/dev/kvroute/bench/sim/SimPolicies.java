package dev.kvroute.bench.sim;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.tokenize.PromptTokenizer;
import java.util.List;

/**
 * The policies the simulator knows, by name.
 *
 * <p>Immutable and thread-safe.
 */
public final class SimPolicies {
  /** Names accepted by {@link #router}. */
  public static final List<String> NAMES = List.of("round-robin");

  public static SimPolicies defaults() {
    return new SimPolicies();
  }

  /** @throws IllegalArgumentException if {@code name} is not a known policy */
  void check(String name) {
    if (!NAMES.contains(name)) {
      throw new IllegalArgumentException("policy: " + name + " (expected one of " + NAMES + ")");
    }
  }

  SimRouter router(String name, SimFleet fleet, PromptTokenizer tokenizer) {
    check(name);
    List<BackendId> backends = fleet.backends();
    LoadTracker loads = LoadTracker.create();
    int[] next = {0};
    return view -> {
      int replica = next[0]++ % backends.size();
      int[] tokens = tokenizer.tokenize(view);
      Lease lease = loads.acquire(backends.get(replica), tokens.length);
      return new SimRouter.Routed(replica, tokens, lease);
    };
  }
}
