package dev.kvroute.core.index;

import java.util.Objects;

/**
 * A prompt whose chained page hashes ({@link PageHash}) are computed on first use and kept, so that
 * a match and an insert of the same prompt hash it once. Hashing is O(pages), each page once. A prompt
 * may start from the hashes an earlier prompt with the same leading tokens computed ({@link
 * PageHashes}): it then hashes only the pages after those. Its tokens may be held in segments
 * ({@link SegmentedTokens}): a page inside one segment is hashed where it lies, one across two is
 * first copied out; the flat array is assembled only if {@link #tokens()} is asked for.
 *
 * <p>Not thread-safe: one prompt belongs to one request.
 */
final class HashedPrompt implements PrefixIndex.Prompt {
  private final SegmentedTokens tokens;
  private final int pageSize;
  private final long[] hashes;
  private final long namespace;
  private int computed;
  // The nodes the last match descended through (see descended), and the table and its change count.
  private int[] path;
  private int pathDepth;
  private NodeTable pathTable;
  private long pathChanges;
  private int[] straddle; // a page that spans two segments, copied out to be hashed

  HashedPrompt(int[] tokens, int pageSize) {
    this(tokens, pageSize, 0L);
  }

  /** A prompt in {@code namespace} ({@link PrefixIndex#namespace}): its page-hash chain is seeded with it. */
  HashedPrompt(int[] tokens, int pageSize, long namespace) {
    this(SegmentedTokens.of(tokens), pageSize, namespace);
  }

  /** As {@link #HashedPrompt(int[], int, long)} for tokens held in segments. */
  HashedPrompt(SegmentedTokens tokens, int pageSize, long namespace) {
    this.tokens = Objects.requireNonNull(tokens, "tokens");
    this.pageSize = pageSize;
    this.hashes = new long[tokens.length() / pageSize];
    this.namespace = namespace;
  }

  /**
   * A prompt in {@code namespace} whose first {@code knownPages} page hashes are {@code known}'s (the
   * caller guarantees that those pages' tokens, and so their chain, are the same as the prompt {@code
   * known} came from), at most {@code known.pages()} and this prompt's pages.
   */
  HashedPrompt(SegmentedTokens tokens, int pageSize, long namespace, PageHashes known, int knownPages) {
    this(tokens, pageSize, namespace);
    if (!known.fits(pageSize, namespace) || knownPages < 0 || knownPages > known.pages()) {
      throw new IllegalArgumentException("known: " + known.pages() + " pages at page size "
          + known.pageSize() + " for " + knownPages + " pages at page size " + pageSize
          + " (expected: the same page size and namespace, and at most its pages)");
    }
    int n = Math.min(knownPages, hashes.length);
    known.copyTo(hashes, n);
    computed = n;
  }

  @Override
  public int[] tokens() {
    return tokens.toArray();
  }

  @Override
  public int length() {
    return tokens.length();
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

  @Override
  public PageHashes pageHashes() {
    // once every page is hashed the array is never written again: shared rather than copied
    long[] kept = computed == hashes.length ? hashes : java.util.Arrays.copyOf(hashes, computed);
    return new PageHashes(pageSize, namespace, kept, computed);
  }

  /** The chained hash of page {@code d} (0-based), {@code d} below {@link #pages()}. */
  long hash(int d) {
    while (computed <= d) {
      long parent = computed == 0 ? PageHash.root(namespace) : hashes[computed - 1];
      hashes[computed] = pageHash(parent, computed * pageSize);
      computed++;
    }
    return hashes[d];
  }

  private long pageHash(long parent, int from) {
    int s = tokens.segmentHolding(from, pageSize);
    if (s >= 0) {
      return PageHash.next(parent, tokens.array(s), from - tokens.start(s), pageSize);
    }
    if (straddle == null) {
      straddle = new int[pageSize];
    }
    tokens.copy(from, straddle, 0, pageSize);
    return PageHash.next(parent, straddle, 0, pageSize);
  }

  /**
   * Room for a match to record the node of each page it descends through ({@link #descended}, in
   * the form of {@link #knownNode}): an array of at least {@link #pages()} ids, kept with this prompt.
   */
  int[] pathBuffer() {
    if (path == null) {
      path = new int[hashes.length];
    }
    pathDepth = 0;
    pathTable = null;
    return path;
  }

  /**
   * Records that a match found this prompt's first {@code depth} pages in {@code table}, at the nodes
   * it wrote into {@link #pathBuffer}, when the table had made {@code changes} changes.
   */
  void descended(NodeTable table, long changes, int depth) {
    pathTable = table;
    pathChanges = changes;
    pathDepth = depth;
  }

  /**
   * How many of this prompt's first pages a descent of {@code table} may take from {@link #path}
   * instead of looking them up: the depth the last match recorded, if that was in this table and the
   * table has allocated and freed no node since; otherwise 0.
   */
  int knownDepth(NodeTable table) {
    return pathTable == table && pathChanges == table.changes() ? pathDepth : 0;
  }

  /**
   * The node of page {@code d}, {@code d} below {@link #knownDepth}: its id, negated if the match
   * found it through the hash map rather than its parent's child hint.
   */
  int knownNode(int d) {
    return path[d];
  }
}
