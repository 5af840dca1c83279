package dev.kvroute.core.policy;

/**
 * Chooses a backend for one request from the healthy candidates.
 *
 * <p>A policy depends only on its {@link RoutingContext}: the router fills the candidates' matched
 * tokens from its prefix index, the simulator's {@code oracle} from the engines' true caches, and
 * the same policy code decides either way.
 *
 * <p>Implementations are thread-safe; they may keep internal state (a round-robin counter, a hash
 * ring), but all randomness comes from an injected seeded generator.
 */
public interface RoutingPolicy {
  /** The policy's configuration name, e.g. {@code cache-aware}. */
  String name();

  /** Picks one of {@code context.candidates()}; never returns a backend outside that list. */
  Decision choose(RoutingContext context);

  /**
   * What of the prompt this policy reads to decide for a request with session key {@code sessionKey}
   * ({@code null}: none), so that the router computes no more than that ({@link PromptReads}). The
   * default, {@link PromptReads#PREFIX_MATCH}, reads everything; a policy that returns less must
   * decide the same whatever the skipped parts of its context hold. Constant time, no allocation.
   */
  default PromptReads reads(String sessionKey) {
    return PromptReads.PREFIX_MATCH;
  }

  /**
   * The decision {@link #choose} would take now, without changing the policy's state (no counter
   * advanced, no draw from the injected generator). Where the choice involves a random draw (a
   * tie, {@code random}, {@code power-of-two}) the draw comes from a generator seeded by the
   * context, so the explanation is deterministic but may name a different backend among the tied
   * ones than the real choice would.
   */
  default Decision explain(RoutingContext context) {
    return choose(context);
  }
}
