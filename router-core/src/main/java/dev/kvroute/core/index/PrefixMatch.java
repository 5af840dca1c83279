package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import java.util.Map;

/**
 * The result of one descent of the {@link PrefixIndex}: for every backend the index knows, how many
 * leading tokens of the prompt it is believed to hold in its KV cache (a multiple of the page size).
 *
 * <p>Immutable and thread-safe.
 *
 * @param promptTokens length of the prompt that was matched
 * @param matchedTokens matched leading tokens per backend; backends with no match map to 0
 */
public record PrefixMatch(int promptTokens, Map<BackendId, Integer> matchedTokens) {
  public PrefixMatch {
    if (!(matchedTokens instanceof OrdinalMatch)) { // already immutable: the radix index's own form
      matchedTokens = Map.copyOf(matchedTokens);
    }
  }

  /** Matched leading tokens for {@code backend}; 0 when unknown. */
  public int matched(BackendId backend) {
    if (matchedTokens instanceof OrdinalMatch m) {
      return m.tokens(backend);
    }
    return matchedTokens.getOrDefault(backend, 0);
  }
}
