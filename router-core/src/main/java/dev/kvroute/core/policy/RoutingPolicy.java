package dev.kvroute.core.policy;

/**
 * Chooses a backend for one request from the healthy candidates.
 *
 * <p>Implementations are thread-safe; they may keep internal state (a round-robin counter, a hash
 * ring), but all randomness comes from an injected seeded generator.
 */
public interface RoutingPolicy {
  /** The policy's configuration name, e.g. {@code cache-aware}. */
  String name();

  /** Picks one of {@code context.candidates()}; never returns a backend outside that list. */
  Decision choose(RoutingContext context);
}
