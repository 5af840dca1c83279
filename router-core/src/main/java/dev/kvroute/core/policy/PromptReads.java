package dev.kvroute.core.policy;

/**
 * How much of a request's prompt a {@link RoutingPolicy} reads, from least to most: what the router
 * must compute before it asks the policy ({@link RoutingPolicy#reads}). Each level includes the ones
 * before it.
 *
 * <p>Routing skips what the policy does not read: a policy that reads {@link #NONE} is routed with no
 * tokenizing, no page hashing and no prefix-index work, as nginx or HAProxy would route it.
 */
public enum PromptReads {
  /**
   * Nothing of the prompt: the router neither tokenizes it nor touches the prefix index. The context's
   * {@link RoutingContext#promptTokens()} is the length of tokens the caller gave, else {@code 0}, and
   * every candidate's {@link Candidate#matchedTokens()} is {@code 0}. {@code round-robin}, {@code
   * random}, {@code least-loaded}, {@code power-of-two}, and {@code sticky} for a request with a
   * session key.
   */
  NONE,

  /**
   * The prompt's tokens (its length, the hash of its first 16), not the prefix match: the prompt is
   * tokenized, but neither matched against the prefix index nor recorded in it; every candidate's
   * {@link Candidate#matchedTokens()} is {@code 0}. {@code sticky} for a request without a session
   * key (it hashes the first 16 tokens).
   */
  TOKENS,

  /**
   * Every candidate's matched tokens: the prompt is tokenized, hashed into pages, matched against the
   * prefix index, and recorded in the chosen backend's view (pinned until the request ends). {@code
   * cache-aware}, {@code cost}, and the simulator's {@code oracle}; the default of every policy.
   */
  PREFIX_MATCH
}
