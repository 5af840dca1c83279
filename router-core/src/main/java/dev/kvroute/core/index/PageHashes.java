package dev.kvroute.core.index;

import java.util.Objects;

/**
 * The chained page hashes ({@link PageHash}) that one prompt of a prefix index computed for its first
 * {@link #pages()} pages, at a page size and in a namespace, kept so that a later prompt starting with
 * the same tokens takes them instead of hashing those pages again ({@link
 * PrefixIndex#prompt(int[], long, PageHashes, int)}). Obtained from {@link
 * PrefixIndex.Prompt#pageHashes()} after the prompt was matched or inserted.
 *
 * <p>Memory: {@code 8 × pages} bytes plus about 40 ({@link #estimatedBytes}); the array may be the
 * prompt's own, shared once every page of it is hashed (it is never written again).
 *
 * <p>Immutable and thread-safe.
 */
public final class PageHashes {
  /** No page hashes: a later prompt hashes every page. */
  public static final PageHashes NONE = new PageHashes(1, 0L, new long[0], 0);

  private final int pageSize;
  private final long namespace;
  private final long[] hashes;
  private final int pages;

  PageHashes(int pageSize, long namespace, long[] hashes, int pages) {
    this.pageSize = pageSize;
    this.namespace = namespace;
    this.hashes = Objects.requireNonNull(hashes, "hashes");
    this.pages = pages;
  }

  /** Pages whose hashes are kept. */
  public int pages() {
    return pages;
  }

  /** The page size, in tokens, they were computed at. */
  public int pageSize() {
    return pageSize;
  }

  /** The namespace ({@link PrefixIndex#namespace(String)}) their chain was seeded with. */
  public long namespace() {
    return namespace;
  }

  /** Heap bytes, estimated: the array (whole, if shared) plus the object. */
  public long estimatedBytes() {
    return 40 + 16 + 8L * hashes.length;
  }

  /** Whether these hashes apply to a prompt of {@code pageSize} in {@code namespace}. */
  boolean fits(int pageSize, long namespace) {
    return this.pageSize == pageSize && this.namespace == namespace;
  }

  /** The hash of page {@code d}, {@code d} below {@link #pages()}. */
  long hash(int d) {
    return hashes[d];
  }

  /** Copies the first {@code count} hashes into {@code to}. */
  void copyTo(long[] to, int count) {
    System.arraycopy(hashes, 0, to, 0, count);
  }
}
