package dev.kvroute.core.index;

import java.util.Objects;

/**
 * A prompt whose chained page hashes ({@link PageHash}) are computed on first use and kept, so that
 * a match and an insert of the same prompt hash it once. Hashing is O(pages), each page once.
 *
 * <p>Not thread-safe: one prompt belongs to one request.
 */
final class HashedPrompt implements PrefixIndex.Prompt {
  private final int[] tokens;
  private final int pageSize;
  private final long[] hashes;
  private final long namespace;
  private int computed;

  HashedPrompt(int[] tokens, int pageSize) {
    this(tokens, pageSize, 0L);
  }

  /** A prompt in {@code namespace} ({@link PrefixIndex#namespace}): its page-hash chain is seeded with it. */
  HashedPrompt(int[] tokens, int pageSize, long namespace) {
    this.tokens = Objects.requireNonNull(tokens, "tokens");
    this.pageSize = pageSize;
    this.hashes = new long[tokens.length / pageSize];
    this.namespace = namespace;
  }

  @Override
  public int[] tokens() {
    return tokens;
  }

  @Override
  public long namespace() {
    return namespace;
  }

  int pageSize() {
    return pageSize;
  }

  /** Whole pages of the prompt. */
  int pages() {
    return hashes.length;
  }

  /** The chained hash of page {@code d} (0-based), {@code d} below {@link #pages()}. */
  long hash(int d) {
    while (computed <= d) {
      long parent = computed == 0 ? PageHash.root(namespace) : hashes[computed - 1];
      hashes[computed] = PageHash.next(parent, tokens, computed * pageSize, pageSize);
      computed++;
    }
    return hashes[d];
  }
}
