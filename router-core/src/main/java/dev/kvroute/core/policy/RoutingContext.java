package dev.kvroute.core.policy;

import java.util.List;

/**
 * Everything a {@link RoutingPolicy} may look at for one request.
 *
 * <p>Immutable and thread-safe.
 *
 * @param promptTokens prompt length in tokens
 * @param sessionKey session key, or {@code null} when the request has none
 * @param firstPageHash hash of the prompt's first page of tokens (sticky routing's fallback key)
 * @param candidates the healthy backends, in a stable order; never empty
 */
public record RoutingContext(
    int promptTokens, String sessionKey, long firstPageHash, List<Candidate> candidates) {
  public RoutingContext {
    candidates = List.copyOf(candidates);
    if (candidates.isEmpty()) {
      throw new IllegalArgumentException("candidates: empty (expected: at least one healthy backend)");
    }
  }

  /**
   * The hash the router puts in {@link #firstPageHash()}: a 64-bit hash of the first
   * {@code pageSizeTokens} tokens of {@code tokens} (all of them when the prompt is shorter). The
   * simulator uses it too, so sticky routing agrees between the two.
   *
   * @throws IllegalArgumentException if {@code pageSizeTokens < 1}
   */
  public static long firstPageHash(int[] tokens, int pageSizeTokens) {
    if (pageSizeTokens < 1) {
      throw new IllegalArgumentException("pageSizeTokens: " + pageSizeTokens + " (expected: >= 1)");
    }
    return Hashing.hash64(tokens, 0, Math.min(tokens.length, pageSizeTokens));
  }
}
