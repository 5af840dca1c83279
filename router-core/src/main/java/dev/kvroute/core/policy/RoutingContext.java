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
}
