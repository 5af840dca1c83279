package dev.kvroute.core.policy;

import java.util.List;

/**
 * Everything a {@link RoutingPolicy} may look at for one request.
 *
 * <p>Immutable and thread-safe.
 *
 * @param promptTokens prompt length in tokens
 * @param sessionKey session key, or {@code null} when the request has none
 * @param leadHash hash of the prompt's first {@value #LEAD_TOKENS} tokens, whatever the index's page
 *     (sticky routing's fallback key; {@link #leadHash(int[], int)})
 * @param candidates the healthy backends, in a stable order; never empty
 */
public record RoutingContext(
    int promptTokens, String sessionKey, long leadHash, List<Candidate> candidates) {
  public RoutingContext {
    candidates = List.copyOf(candidates);
    if (candidates.isEmpty()) {
      throw new IllegalArgumentException("candidates: empty (expected: at least one healthy backend)");
    }
  }

  /**
   * The prompt tokens {@link #leadHash()} covers: 16, one block of vLLM's default size, so that
   * requests sharing a system prompt share a sticky backend whatever page the prefix index uses (at
   * 64-token pages a short system prompt and the user's message would fall into one key).
   */
  public static final int LEAD_TOKENS = 16;

  /**
   * The hash the router puts in {@link #leadHash()} (with {@code leadTokens} = {@link #LEAD_TOKENS}):
   * a 64-bit hash of the first {@code leadTokens} tokens of {@code tokens} (all of them when the
   * prompt is shorter). The simulator uses it too, so sticky routing agrees between the two.
   *
   * @throws IllegalArgumentException if {@code leadTokens < 1}
   */
  public static long leadHash(int[] tokens, int leadTokens) {
    if (leadTokens < 1) {
      throw new IllegalArgumentException("leadTokens: " + leadTokens + " (expected: >= 1)");
    }
    return Hashing.hash64(tokens, 0, Math.min(tokens.length, leadTokens));
  }
}
