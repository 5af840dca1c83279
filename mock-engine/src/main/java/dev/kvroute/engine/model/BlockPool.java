package dev.kvroute.engine.model;

import java.util.HashMap;

/**
 * The KV block pool and its prefix cache. Blocks are counted, not addressed: a block is either free
 * (never cached, or evicted), <em>owned</em> (held by one request, not yet full or not yet computed, so
 * not in the cache), or <em>cached</em> (a full computed block in the hash map, held by zero or more
 * requests). Cached blocks nobody holds are <em>evictable</em> and sit in an LRU list, least recently
 * released at the head.
 *
 * <p>When a request finishes computing a block whose hash is already cached (two requests computed
 * the same prefix concurrently), it switches to the cached copy and frees its own, so the cache holds
 * each hash once.
 *
 * <p>Not thread-safe; owned by one engine.
 */
final class BlockPool {

  /** A cached block: its chained hash, how many requests hold it, and its LRU links while evictable. */
  static final class Block {
    final long hash;
    int refCount;
    Block prev;
    Block next;

    Block(long hash) {
      this.hash = hash;
    }
  }

  private final int capacity;
  private final HashMap<Long, Block> cached = new HashMap<>();
  /** Sentinel of the circular evictable list: {@code lru.next} is evicted first. */
  private final Block lru = new Block(0);
  private int evictable;
  private int owned;
  private long evictions;
  /** Where evictions are reported as {@link KvCacheEvent.BlockRemoved}; null when events are off. */
  private final java.util.List<KvCacheEvent> events;

  BlockPool(int capacity) {
    this(capacity, null);
  }

  BlockPool(int capacity, java.util.List<KvCacheEvent> events) {
    this.capacity = capacity;
    this.events = events;
    lru.prev = lru;
    lru.next = lru;
  }

  int capacity() {
    return capacity;
  }

  /** Blocks neither owned nor cached. */
  int free() {
    return capacity - cached.size() - owned;
  }

  /** Blocks an allocation could obtain now: free plus evictable. */
  int available() {
    return free() + evictable;
  }

  /** Blocks held by requests (owned plus cached with a positive reference count). */
  int used() {
    return owned + cached.size() - evictable;
  }

  int cachedBlocks() {
    return cached.size();
  }

  int evictableBlocks() {
    return evictable;
  }

  long evictions() {
    return evictions;
  }

  /** The cached block with {@code hash}, or null; does not touch LRU order. */
  Block peek(long hash) {
    return cached.get(hash);
  }

  /** Takes a reference on a cached block, removing it from the LRU list if it was evictable. */
  void acquire(Block b) {
    if (b.refCount++ == 0) {
      unlink(b);
      evictable--;
    }
  }

  /** Drops a reference; a block nobody holds becomes the most recently used evictable block. */
  void release(Block b) {
    if (b.refCount <= 0) {
      throw new IllegalStateException("release of an unreferenced block " + Long.toHexString(b.hash));
    }
    if (--b.refCount == 0) {
      b.prev = lru.prev;
      b.next = lru;
      lru.prev.next = b;
      lru.prev = b;
      evictable++;
    }
  }

  /**
   * Gives {@code n} owned blocks to a request, evicting least recently used cached blocks if free ones
   * do not suffice. Evicts nothing and returns false if {@code n > available()}.
   */
  boolean allocateOwned(int n) {
    if (n <= 0) {
      return true;
    }
    if (n > available()) {
      return false;
    }
    while (free() < n) {
      evictOne();
    }
    owned += n;
    return true;
  }

  /** Returns {@code n} owned blocks to the free pool. */
  void freeOwned(int n) {
    if (n < 0 || n > owned) {
      throw new IllegalStateException("freeOwned(" + n + ") with " + owned + " owned");
    }
    owned -= n;
  }

  /**
   * Turns one owned block, now full and computed, into the cached block {@code hash}, held once by the
   * caller. If {@code hash} is already cached the caller takes a reference on that block instead and
   * its own block is freed.
   */
  Block promote(long hash) {
    if (owned <= 0) {
      throw new IllegalStateException("promote without an owned block");
    }
    owned--;
    Block b = cached.get(hash);
    if (b != null) {
      acquire(b);
      return b;
    }
    b = new Block(hash);
    b.refCount = 1;
    cached.put(hash, b);
    return b;
  }

  private void evictOne() {
    Block victim = lru.next;
    if (victim == lru) {
      throw new IllegalStateException("nothing to evict");
    }
    unlink(victim);
    evictable--;
    cached.remove(victim.hash);
    evictions++;
    if (events != null) {
      events.add(new KvCacheEvent.BlockRemoved(new long[] {victim.hash}));
    }
  }

  /**
   * Drops every cached block (vLLM's {@code reset_prefix_cache}); only when no block is held ({@link
   * #used()} is 0). Not counted as evictions.
   *
   * @return false, changing nothing, if a request holds a block
   */
  boolean clearCache() {
    if (used() != 0) {
      return false;
    }
    cached.clear();
    lru.prev = lru;
    lru.next = lru;
    evictable = 0;
    return true;
  }

  private static void unlink(Block b) {
    b.prev.next = b.next;
    b.next.prev = b.prev;
    b.prev = null;
    b.next = null;
  }

  /** Hashes of the evictable blocks, least recently used first (for tests). */
  long[] evictionOrder() {
    long[] out = new long[evictable];
    int i = 0;
    for (Block b = lru.next; b != lru; b = b.next) {
      out[i++] = b.hash;
    }
    return out;
  }

  /**
   * Checks the pool's accounting: the counts add up to the capacity, the LRU list holds exactly the
   * unreferenced cached blocks, and the summed references equal {@code expectedRefs}.
   *
   * @throws IllegalStateException naming the first broken invariant
   */
  void checkInvariants(long expectedRefs, int expectedOwned) {
    if (free() < 0) {
      throw new IllegalStateException("negative free blocks: " + free());
    }
    if (owned != expectedOwned) {
      throw new IllegalStateException("owned " + owned + " != held by requests " + expectedOwned);
    }
    int inList = 0;
    for (Block b = lru.next; b != lru; b = b.next) {
      if (b.refCount != 0 || cached.get(b.hash) != b) {
        throw new IllegalStateException("LRU holds a referenced or uncached block");
      }
      inList++;
    }
    if (inList != evictable) {
      throw new IllegalStateException("LRU length " + inList + " != evictable " + evictable);
    }
    long refs = 0;
    int zero = 0;
    for (Block b : cached.values()) {
      if (b.refCount < 0) {
        throw new IllegalStateException("negative refCount");
      }
      refs += b.refCount;
      if (b.refCount == 0) {
        zero++;
      }
    }
    if (zero != evictable) {
      throw new IllegalStateException("unreferenced blocks " + zero + " != evictable " + evictable);
    }
    if (refs != expectedRefs) {
      throw new IllegalStateException("references " + refs + " != held by requests " + expectedRefs);
    }
  }
}
