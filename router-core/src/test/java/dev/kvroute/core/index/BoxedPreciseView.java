package dev.kvroute.core.index;

import dev.kvroute.core.kvevents.KvEvent;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * The precise view as it was before issue 15 (boxed {@code HashMap}s, a record per block), kept as
 * the reference {@link PreciseViewEquivalenceTest} compares {@link PreciseView} with.
 *
 * Same semantics as {@link PreciseView}; not thread-safe.
 */
final class BoxedPreciseView {
  /** Seed for the root of blocks stored under an unseen parent. */
  private static final long ORPHAN_SEED = 0x6e6168706f2d766bL;

  /** One engine block: the router pages it completes, in chain order. */
  private record Block(long[] pages) {
    long last() {
      return pages[pages.length - 1];
    }
  }

  private final int pageSize;
  private final Map<Long, Block> blocks = new HashMap<>();
  /** Router page key to the number of engine blocks holding it (usually 1). */
  private final Map<Long, Integer> pages = new HashMap<>();
  /** Speculative page key to its expiry (ticker nanos). */
  private final Map<Long, Long> speculative = new HashMap<>();
  private final ArrayDeque<long[]> speculativeOrder = new ArrayDeque<>(); // {key, expiry}
  private int unusableBlockSize; // 0 = usable; else the last block size that did not fit
  private long orphanBlocks;

  BoxedPreciseView(int pageSize) {
    this.pageSize = pageSize;
  }

  PreciseView.Outcome apply(KvEvent event) {
    if (event instanceof KvEvent.BlockStored s) {
      return stored(s);
    }
    if (event instanceof KvEvent.BlockRemoved r) {
      if (!gpu(r.medium(), r.groupIdx())) {
        return PreciseView.Outcome.IGNORED;
      }
      for (long h : r.blockHashes()) {
        Block b = blocks.remove(h);
        if (b != null) {
          for (long p : b.pages()) {
            pages.computeIfPresent(p, (k, n) -> n == 1 ? null : n - 1);
          }
        }
      }
      return PreciseView.Outcome.APPLIED;
    }
    if (event instanceof KvEvent.AllBlocksCleared) {
      clear();
      return PreciseView.Outcome.APPLIED;
    }
    return PreciseView.Outcome.DROPPED; // Unknown
  }

  private PreciseView.Outcome stored(KvEvent.BlockStored s) {
    if (!gpu(s.medium(), s.groupIdx())) {
      return PreciseView.Outcome.IGNORED;
    }
    int blockSize = s.blockSize();
    if (blockSize % pageSize != 0) {
      unusableBlockSize = blockSize;
      return PreciseView.Outcome.DROPPED;
    }
    long[] hashes = s.blockHashes();
    int[] tokens = s.tokenIds();
    if ((long) hashes.length * blockSize != tokens.length) {
      return PreciseView.Outcome.DROPPED;
    }
    long parentKey;
    if (s.parentBlockHash().isEmpty()) {
      parentKey = root(s.loraName());
    } else {
      Block parent = blocks.get(s.parentBlockHash().getAsLong());
      if (parent != null) {
        parentKey = parent.last();
      } else {
        parentKey = orphanRoot(s.parentBlockHash().getAsLong());
        orphanBlocks += hashes.length;
      }
    }
    int perBlock = blockSize / pageSize;
    for (int b = 0; b < hashes.length; b++) {
      Block known = blocks.get(hashes[b]);
      if (known != null) { // re-announced (replay overlap, or two requests computed it): keep the chain
        parentKey = known.last();
        continue;
      }
      long[] keys = new long[perBlock];
      for (int p = 0; p < perBlock; p++) {
        parentKey = PageHash.next(parentKey, tokens, b * blockSize + p * pageSize, pageSize);
        keys[p] = parentKey;
        pages.merge(parentKey, 1, Integer::sum);
      }
      blocks.put(hashes[b], new Block(keys));
    }
    return PreciseView.Outcome.APPLIED;
  }

  private static boolean gpu(String medium, int groupIdx) {
    return (medium == null || KvEvent.MEDIUM_GPU.equalsIgnoreCase(medium)) && groupIdx <= 0;
  }

  /**
   * The chain root of a prompt's first page: the router's own for the base model, or for adapter
   * {@code loraName} its namespace's ({@link PrefixIndex#namespace}), so that event-fed pages and a
   * request's prompt hash alike.
   */
  static long root(String loraName) {
    return PageHash.root(PrefixIndex.namespace(loraName));
  }

  private static long orphanRoot(long parentEngineHash) {
    return PageHash.next(ORPHAN_SEED, new int[] {(int) (parentEngineHash >>> 32), (int) parentEngineHash}, 0, 2);
  }

  void clear() {
    blocks.clear();
    pages.clear();
    speculative.clear();
    speculativeOrder.clear();
  }

  /** Leading pages of {@code keys} held, or speculatively held until after {@code nowNanos}. */
  int matchPages(long[] keys, long nowNanos) {
    int d = 0;
    while (d < keys.length && (pages.containsKey(keys[d]) || speculativeAt(keys[d], nowNanos))) {
      d++;
    }
    return d;
  }

  private boolean speculativeAt(long key, long nowNanos) {
    Long expiry = speculative.get(key);
    return expiry != null && expiry - nowNanos > 0;
  }

  /** Marks {@code keys} speculatively held until {@code expiryNanos}; drops expired entries first. */
  void speculate(long[] keys, long nowNanos, long expiryNanos) {
    expire(nowNanos);
    for (long k : keys) {
      if (!pages.containsKey(k)) {
        speculative.put(k, expiryNanos);
        speculativeOrder.addLast(new long[] {k, expiryNanos});
      }
    }
  }

  void expire(long nowNanos) {
    long[] head;
    while ((head = speculativeOrder.peekFirst()) != null && head[1] - nowNanos <= 0) {
      speculativeOrder.pollFirst();
      speculative.remove(head[0], head[1]);
    }
  }

  int blockCount() {
    return blocks.size();
  }

  int pageCount() {
    return pages.size();
  }

  int speculativeCount() {
    return speculative.size();
  }

  long orphanBlocks() {
    return orphanBlocks;
  }

  /** The engine block size that did not fit the page size, or 0 when the events map to pages. */
  int unusableBlockSize() {
    return unusableBlockSize;
  }

  long estimatedBytes() {
    // HashMap entry + boxed key ~ 64 bytes; a block adds its record and key array
    return blocks.size() * 120L + pages.size() * 80L
        + speculative.size() * 100L;
  }

  void checkInvariants() {
    Map<Long, Integer> counted = new HashMap<>();
    for (Block b : blocks.values()) {
      for (long p : b.pages()) {
        counted.merge(p, 1, Integer::sum);
      }
    }
    if (!counted.equals(pages)) {
      throw new IllegalStateException("precise view: page counts " + pages.size()
          + " pages do not match the " + blocks.size() + " blocks' pages (" + counted.size() + ")");
    }
    if (speculative.size() > speculativeOrder.size()) {
      throw new IllegalStateException("precise view: speculative entries without an expiry record");
    }
  }
}
