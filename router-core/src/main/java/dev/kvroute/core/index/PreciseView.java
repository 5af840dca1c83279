package dev.kvroute.core.index;

import dev.kvroute.core.kvevents.KvEvent;

/**
 * One backend's precise view: the blocks its engine reported in KV events, keyed by the engine's block
 * hashes and mapped to the router's own page keys ({@link PageHash} chained over the events' token
 * ids), plus short-lived speculative pages for requests routed to it whose first event has not come.
 *
 * <p>An engine block of {@code blockSize} tokens maps to {@code blockSize / pageSize} router pages; a
 * block size that is not a multiple of the router's page size makes the view unusable (the events
 * cannot be mapped to pages without splitting a page across blocks). A block whose parent the view
 * has not seen is kept, chained from a root unique to that parent: it is removed and counted as the
 * engine reports, but it matches no prompt (a prompt's pages chain from {@link PageHash#ROOT}), which
 * is right since its prefix is not known to be held.
 *
 * <p>Memory: no object per block. {@code blocks} maps an engine block hash to the block's last router
 * page key (what a child block chains from); a block spanning several pages (engine block size a
 * multiple of the page size) also has its page keys in a slab of {@code long}s, found through {@code
 * spans}. Page counts, speculative expiries and the expiry queue are primitive too, so a view costs
 * about 100 bytes per single-page block (see {@code docs/performance.md}, issue 15).
 *
 * <p>Not thread-safe: {@link EventPrefixIndex} guards each view with its own lock.
 */
final class PreciseView {
  /** Seed for the root of blocks stored under an unseen parent. */
  private static final long ORPHAN_SEED = 0x6e6168706f2d766bL;
  private static final int MIN_SLAB = 64;
  private static final int MIN_ORDER = 16;

  private final int pageSize;
  /** Engine block hash to the block's last router page key. */
  private final LongLongMap blocks = new LongLongMap();
  /** Engine block hash to its record's offset in {@link #slab}, for blocks of more than one page. */
  private final LongLongMap spans = new LongLongMap();
  /** Records of multi-page blocks: {@code slab[o]} = page count n, {@code slab[o+1..o+n]} = pages. */
  private long[] slab = new long[0];
  private int slabUsed; // longs written, live or freed
  private int slabFree; // longs of freed records, reclaimed by compaction
  /** Router page key to the number of engine blocks holding it (usually 1). */
  private final LongIntMap pages = new LongIntMap();
  /** Speculative page key to its expiry (ticker nanos). */
  private final LongLongMap speculative = new LongLongMap();
  /** Ring of {key, expiry} pairs in the order speculated: pair i at {@code order[2i], order[2i+1]}. */
  private long[] order = new long[2 * MIN_ORDER];
  private int orderHead;
  private int orderCount;
  private int unusableBlockSize; // 0 = usable; else the last block size that did not fit
  private long orphanBlocks;

  PreciseView(int pageSize) {
    this.pageSize = pageSize;
  }

  /** What applying one event did. */
  enum Outcome {
    APPLIED,
    /** Not the GPU prefix cache, another KV group, or a known duplicate: nothing to do, not an error. */
    IGNORED,
    /** Malformed or unmappable; counted as dropped. */
    DROPPED
  }

  Outcome apply(KvEvent event) {
    if (event instanceof KvEvent.BlockStored s) {
      return stored(s);
    }
    if (event instanceof KvEvent.BlockRemoved r) {
      if (!gpu(r.medium(), r.groupIdx())) {
        return Outcome.IGNORED;
      }
      for (long h : r.blockHashes()) {
        removeBlock(h);
      }
      return Outcome.APPLIED;
    }
    if (event instanceof KvEvent.AllBlocksCleared) {
      clear();
      return Outcome.APPLIED;
    }
    return Outcome.DROPPED; // Unknown
  }

  private void removeBlock(long engineHash) {
    if (!blocks.containsKey(engineHash)) {
      return;
    }
    long last = blocks.get(engineHash, 0);
    blocks.remove(engineHash);
    if (!spans.containsKey(engineHash)) {
      pages.add(last, -1);
      return;
    }
    int o = (int) spans.get(engineHash, 0);
    spans.remove(engineHash);
    int n = (int) slab[o];
    for (int i = 1; i <= n; i++) {
      pages.add(slab[o + i], -1);
    }
    slabFree += n + 1;
    if (spans.size() == 0) {
      slab = new long[0];
      slabUsed = 0;
      slabFree = 0;
    } else if (slabFree > slabUsed / 2 && slabUsed > MIN_SLAB) {
      compactSlab();
    }
  }

  private Outcome stored(KvEvent.BlockStored s) {
    if (!gpu(s.medium(), s.groupIdx())) {
      return Outcome.IGNORED;
    }
    int blockSize = s.blockSize();
    if (blockSize % pageSize != 0) {
      unusableBlockSize = blockSize;
      return Outcome.DROPPED;
    }
    long[] hashes = s.blockHashes();
    int[] tokens = s.tokenIds();
    if ((long) hashes.length * blockSize != tokens.length) {
      return Outcome.DROPPED;
    }
    long parentKey;
    if (s.parentBlockHash().isEmpty()) {
      parentKey = root(s.loraName());
    } else {
      long parentHash = s.parentBlockHash().getAsLong();
      if (blocks.containsKey(parentHash)) {
        parentKey = blocks.get(parentHash, 0);
      } else {
        parentKey = orphanRoot(parentHash);
        orphanBlocks += hashes.length;
      }
    }
    int perBlock = blockSize / pageSize;
    for (int b = 0; b < hashes.length; b++) {
      long h = hashes[b];
      if (blocks.containsKey(h)) { // re-announced (replay overlap, or two requests computed it): keep the chain
        parentKey = blocks.get(h, 0);
        continue;
      }
      if (perBlock == 1) {
        parentKey = PageHash.next(parentKey, tokens, b * blockSize, pageSize);
        pages.add(parentKey, 1);
      } else {
        int o = allocate(perBlock);
        for (int p = 0; p < perBlock; p++) {
          parentKey = PageHash.next(parentKey, tokens, b * blockSize + p * pageSize, pageSize);
          slab[o + 1 + p] = parentKey;
          pages.add(parentKey, 1);
        }
        spans.put(h, o);
      }
      blocks.put(h, parentKey);
    }
    return Outcome.APPLIED;
  }

  /** Reserves a record of {@code n} pages in the slab; returns its offset, its count already set. */
  private int allocate(int n) {
    if (slabUsed + n + 1 > slab.length) {
      long[] grown = new long[Math.max(MIN_SLAB, Math.max(slabUsed + n + 1, slab.length * 2))];
      System.arraycopy(slab, 0, grown, 0, slabUsed);
      slab = grown;
    }
    int o = slabUsed;
    slab[o] = n;
    slabUsed += n + 1;
    return o;
  }

  /** Copies the live records into a new slab, dropping freed ones, and repoints {@link #spans}. */
  private void compactSlab() {
    long[] old = slab;
    int live = slabUsed - slabFree;
    long[] fresh = new long[Math.max(MIN_SLAB, live * 2)];
    int[] used = {0};
    spans.forEach((h, offset) -> {
      int o = (int) offset;
      int len = (int) old[o] + 1;
      System.arraycopy(old, o, fresh, used[0], len);
      spans.put(h, used[0]);
      used[0] += len;
    });
    slab = fresh;
    slabUsed = used[0];
    slabFree = 0;
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
    spans.clear();
    slab = new long[0];
    slabUsed = 0;
    slabFree = 0;
    pages.clear();
    speculative.clear();
    order = new long[2 * MIN_ORDER];
    orderHead = 0;
    orderCount = 0;
  }

  /** Leading pages of {@code keys} held, or speculatively held until after {@code nowNanos}. */
  int matchPages(long[] keys, long nowNanos) {
    int d = 0;
    while (d < keys.length && (pages.get(keys[d]) != 0 || speculativeAt(keys[d], nowNanos))) {
      d++;
    }
    return d;
  }

  private boolean speculativeAt(long key, long nowNanos) {
    return speculative.containsKey(key) && speculative.get(key, 0) - nowNanos > 0;
  }

  /** Marks {@code keys} speculatively held until {@code expiryNanos}; drops expired entries first. */
  void speculate(long[] keys, long nowNanos, long expiryNanos) {
    expire(nowNanos);
    for (long k : keys) {
      if (pages.get(k) == 0) {
        speculative.put(k, expiryNanos);
        pushOrder(k, expiryNanos);
      }
    }
  }

  void expire(long nowNanos) {
    while (orderCount > 0 && order[2 * orderHead + 1] - nowNanos <= 0) {
      long key = order[2 * orderHead];
      long expiry = order[2 * orderHead + 1];
      orderHead = (orderHead + 1) & (order.length / 2 - 1);
      orderCount--;
      if (speculative.containsKey(key) && speculative.get(key, 0) == expiry) {
        speculative.remove(key);
      }
    }
    if (orderCount < order.length / 16 && order.length > 2 * MIN_ORDER) {
      resizeOrder(order.length / 4);
    }
  }

  private void pushOrder(long key, long expiry) {
    if (orderCount == order.length / 2) {
      resizeOrder(order.length);
    }
    int tail = (orderHead + orderCount) & (order.length / 2 - 1);
    order[2 * tail] = key;
    order[2 * tail + 1] = expiry;
    orderCount++;
  }

  /** Moves the ring into one of {@code pairs} (a power of two, at least orderCount) pairs. */
  private void resizeOrder(int pairs) {
    long[] fresh = new long[2 * pairs];
    int m = order.length / 2 - 1;
    for (int i = 0; i < orderCount; i++) {
      int from = (orderHead + i) & m;
      fresh[2 * i] = order[2 * from];
      fresh[2 * i + 1] = order[2 * from + 1];
    }
    order = fresh;
    orderHead = 0;
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

  /** Heap bytes of this view: its maps' tables, the slab and the expiry ring, headers included. */
  long estimatedBytes() {
    return 64 + blocks.estimatedBytes() + spans.estimatedBytes() + pages.estimatedBytes()
        + speculative.estimatedBytes() + 16 + 8L * slab.length + 16 + 8L * order.length;
  }

  void checkInvariants() {
    LongIntMap counted = new LongIntMap();
    long[] spanLongs = {0};
    blocks.forEach((h, last) -> {
      if (!spans.containsKey(h)) {
        counted.add(last, 1);
        return;
      }
      int o = (int) spans.get(h, 0);
      int n = (int) slab[o];
      if (n < 2 || o + n >= slabUsed || slab[o + n] != last) {
        throw new IllegalStateException("precise view: block " + h + " has a bad slab record at " + o);
      }
      for (int i = 1; i <= n; i++) {
        counted.add(slab[o + i], 1);
      }
      spanLongs[0] += n + 1;
    });
    spans.forEach((h, o) -> {
      if (!blocks.containsKey(h)) {
        throw new IllegalStateException("precise view: slab record for unknown block " + h);
      }
    });
    if (spanLongs[0] != slabUsed - slabFree) {
      throw new IllegalStateException("precise view: slab holds " + (slabUsed - slabFree)
          + " live longs, the blocks' records " + spanLongs[0]);
    }
    boolean[] same = {counted.size() == pages.size()};
    pages.forEach((k, n) -> same[0] &= counted.get(k) == n);
    if (!same[0]) {
      throw new IllegalStateException("precise view: page counts " + pages.size()
          + " pages do not match the " + blocks.size() + " blocks' pages (" + counted.size() + ")");
    }
    if (speculative.size() > orderCount) {
      throw new IllegalStateException("precise view: speculative entries without an expiry record");
    }
  }
}
