package dev.kvroute.core.tokenize;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.kvroute.core.request.TextHash;
import java.util.function.Function;

/**
 * The token cache that both prompt tokenizers keep: token arrays keyed by the {@link TextHash} of
 * their text, bounded by an estimate of their heap bytes ({@code 4 × tokens +}
 * {@value #PIECE_OVERHEAD_BYTES} per piece); a bound of {@code 0} caches nothing. Cached arrays are
 * shared: callers must not change them.
 *
 * <p>Thread-safe.
 */
final class PieceCache {
  /** Per cached piece besides its tokens: key, Caffeine node and array header, rounded up. */
  static final int PIECE_OVERHEAD_BYTES = 128;

  private final Cache<TextHash, int[]> cache;

  /** @throws IllegalArgumentException if {@code maxBytes} is negative */
  PieceCache(long maxBytes) {
    if (maxBytes < 0) {
      throw new IllegalArgumentException("maxCacheBytes: " + maxBytes + " (expected: >= 0)");
    }
    this.cache =
        Caffeine.newBuilder()
            .maximumWeight(maxBytes)
            .weigher(PieceCache::weigh)
            .executor(Runnable::run)
            .build();
  }

  private static int weigh(TextHash key, int[] tokens) {
    return (int) Math.min(Integer.MAX_VALUE, 4L * tokens.length + PIECE_OVERHEAD_BYTES);
  }

  /** The cached tokens of {@code key}, computed by {@code encode} on a miss (shared array). */
  int[] get(TextHash key, Function<? super TextHash, int[]> encode) {
    return cache.get(key, encode);
  }

  /** Whether {@code key}'s tokens are cached (neither its recency nor its frequency counts this). */
  boolean contains(TextHash key) {
    return cache.asMap().containsKey(key);
  }

  /** The cached tokens of {@code key} (shared array), or {@code null}; neither recency nor frequency counts this. */
  int[] peek(TextHash key) {
    return cache.asMap().get(key);
  }

  /** The tokens of {@code piece} by {@code tokenizer}, through the cache; the caller's own copy. */
  int[] encode(Tokenizer tokenizer, String piece) {
    return cache.get(TextHash.of(piece), k -> tokenizer.encode(piece)).clone();
  }

  /** Pieces in the cache now (pending evictions done first). */
  long size() {
    cache.cleanUp();
    return cache.estimatedSize();
  }
}
