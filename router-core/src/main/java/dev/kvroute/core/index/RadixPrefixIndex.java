package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.locks.StampedLock;

/**
 * The approximate multi-tenant radix tree of {@link PrefixIndex#radix}: one node per token page, in
 * primitive arrays.
 *
 * <p><b>Nodes.</b> A node is one page, identified by its chained {@link PageHash} and found through
 * one global hash map from page hash to node id; the chain makes that map double as every node's
 * child map. Nodes are single pages rather than compressed runs because holding, recency and eviction
 * are per page (as in vLLM's block pool): with runs, every divergence between two backends' views and
 * every tail eviction would split a run, and per-backend state would have to be kept per run segment.
 * Fixed-size pages make a node a row of primitive arrays (no object per node).
 *
 * <p><b>Holders.</b> Each node stores a bitmask of the backends that hold it ({@code words} longs per
 * node, one bit per dense backend ordinal, so any number of backends works and up to 64 cost one long).
 * A backend's view is prefix-closed (if it holds a page it holds the page's parent), so its match is
 * the depth at which its bit first drops out during one descent.
 *
 * <p><b>Recency and eviction.</b> Each backend has its own doubly linked list of entries, one per page
 * it holds, with the time the page was last used. An insert moves the prompt's pages to the
 * most-recent end in reverse order (tail page first, first page last), so every page sits behind all
 * its descendants in the list: the least recent entry is always a leaf of that backend's view, and
 * popping it is both LRU and tail-first, the order vLLM's free-block queue evicts in. Eviction is
 * O(1) per page, with no walk of the tree. A backend's node-to-entry lookup is a primitive hash map.
 *
 * <p><b>Memory.</b> Every live node is held by at least one backend and each backend holds at most
 * {@code floor(capacityTokens / pageSizeTokens)} pages, so live nodes never exceed the sum of the
 * capacities in pages. An insert is truncated to the backend's capacity. Bytes: per node 8 (hash) +
 * 4 (parent) + 8 x words (holders) + about 24 (global map); per backend-held page 4 + 4 + 4 + 8
 * (entry: node, links, time) + about 16 (entry map).
 *
 * <p><b>Thread safety.</b> One {@link StampedLock}: {@link #match}, {@link #sizeTokens},
 * {@link #estimatedBytes} and {@link #checkInvariants} take its read lock, so matches from several
 * event loops run in parallel; {@link #insert}, {@link #addBackend} and {@link #removeBackend} take
 * its write lock. StampedLock rather than ReentrantReadWriteLock because its read lock is a single
 * CAS without per-thread hold counts; nothing here re-enters the lock.
 */
final class RadixPrefixIndex implements PrefixIndex {
  private static final int ROOT = 0;
  private static final int FREE = Integer.MIN_VALUE;
  private static final int NIL = -1;
  private static final int INITIAL_NODES = 1024;

  private final int pageSize;
  private final Ticker ticker;
  private final StampedLock lock = new StampedLock();

  // Nodes, as rows of parallel arrays. Node 0 is the root sentinel (the empty prefix).
  private long[] nodeHash; // chained page hash; for a free node, the next free node id
  private int[] nodeParent; // parent node id, or FREE
  private long[] nodeHolders; // words longs per node: bit o of word o/64 = backend ordinal o holds it
  private int words = 1;
  private int nodeHighWater = 1; // ids below this have been used
  private int freeNodes = NIL; // head of the free-node list
  private int liveNodes; // excluding the root
  private final LongIntMap nodeByHash = new LongIntMap();

  // Backends by id and by dense ordinal.
  private final Map<BackendId, View> views = new HashMap<>();
  private View[] byOrdinal = new View[64];
  private long[] registered = new long[1];

  private long lastNanos = Long.MIN_VALUE;

  RadixPrefixIndex(int pageSizeTokens, Ticker ticker) {
    if (pageSizeTokens <= 0) {
      throw new IllegalArgumentException(
          "pageSizeTokens: " + pageSizeTokens + " (expected: > 0)");
    }
    this.pageSize = pageSizeTokens;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    nodeHash = new long[INITIAL_NODES];
    nodeParent = new int[INITIAL_NODES];
    nodeHolders = new long[INITIAL_NODES];
    nodeHash[ROOT] = PageHash.ROOT;
    nodeParent[ROOT] = NIL;
  }

  @Override
  public int pageSizeTokens() {
    return pageSize;
  }

  @Override
  public void addBackend(BackendId backend, long capacityTokens) {
    Objects.requireNonNull(backend, "backend");
    if (capacityTokens < 0) {
      throw new IllegalArgumentException(
          "capacityTokens: " + capacityTokens + " (expected: >= 0)");
    }
    long capacityPages = Math.min(capacityTokens / pageSize, Integer.MAX_VALUE - 8);
    long stamp = lock.writeLock();
    try {
      View view = views.get(backend);
      if (view == null) {
        view = new View(backend, allocateOrdinal());
        views.put(backend, view);
        byOrdinal[view.ordinal] = view;
      }
      view.capacityPages = (int) capacityPages;
      evictOverflow(view);
      view.shrinkToCapacity();
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  @Override
  public void removeBackend(BackendId backend) {
    Objects.requireNonNull(backend, "backend");
    long stamp = lock.writeLock();
    try {
      View view = views.remove(backend);
      if (view == null) {
        return;
      }
      // From the least recent end, so descendants go before their ancestors.
      for (int e = view.head; e != NIL; e = view.entryNext[e]) {
        releaseHolding(view.entryNode[e], view.ordinal);
      }
      byOrdinal[view.ordinal] = null;
      registered[view.ordinal >>> 6] &= ~(1L << view.ordinal);
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  @Override
  public PrefixMatch match(int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    int pages = tokens.length / pageSize;
    long stamp = lock.readLock();
    try {
      int w = words;
      long[] active = Arrays.copyOf(registered, w);
      int[] matchedPages = new int[w * 64];
      boolean any = false;
      for (long word : active) {
        any |= word != 0;
      }
      long[] holders = nodeHolders;
      int[] parents = nodeParent;
      long hash = PageHash.ROOT;
      int node = ROOT;
      int depth = 0;
      while (any && depth < pages) {
        hash = PageHash.next(hash, tokens, depth * pageSize, pageSize);
        int child = nodeByHash.get(hash);
        if (child == 0 || parents[child] != node) {
          break;
        }
        any = false;
        int row = child * w;
        for (int i = 0; i < w; i++) {
          long before = active[i];
          long after = before & holders[row + i];
          for (long dropped = before & ~after; dropped != 0; dropped &= dropped - 1) {
            matchedPages[(i << 6) + Long.numberOfTrailingZeros(dropped)] = depth;
          }
          active[i] = after;
          any |= after != 0;
        }
        node = child;
        depth++;
      }
      for (int i = 0; i < w; i++) {
        for (long rest = active[i]; rest != 0; rest &= rest - 1) {
          matchedPages[(i << 6) + Long.numberOfTrailingZeros(rest)] = depth;
        }
      }
      @SuppressWarnings({"unchecked", "rawtypes"})
      Map.Entry<BackendId, Integer>[] entries = new Map.Entry[views.size()];
      int n = 0;
      for (View view : views.values()) {
        entries[n++] = Map.entry(view.id, matchedPages[view.ordinal] * pageSize);
      }
      return new PrefixMatch(tokens.length, Map.ofEntries(entries));
    } finally {
      lock.unlockRead(stamp);
    }
  }

  @Override
  public void insert(BackendId backend, int[] tokens) {
    Objects.requireNonNull(backend, "backend");
    Objects.requireNonNull(tokens, "tokens");
    long stamp = lock.writeLock();
    try {
      View view = views.get(backend);
      if (view == null) {
        throw new IllegalArgumentException(
            "backend: " + backend + " is not registered (expected: addBackend first)");
      }
      int pages = Math.min(tokens.length / pageSize, view.capacityPages);
      if (pages == 0) {
        return;
      }
      long now = Math.max(ticker.nanos(), lastNanos);
      lastNanos = now;
      insertPath(view, tokens, pages, now);
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  @Override
  public long sizeTokens(BackendId backend) {
    Objects.requireNonNull(backend, "backend");
    long stamp = lock.readLock();
    try {
      View view = views.get(backend);
      return view == null ? 0 : (long) view.size * pageSize;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  @Override
  public long estimatedBytes() {
    long stamp = lock.readLock();
    try {
      long bytes = 128 // this object, its lock, the ticker reference
          + (16 + 8L * nodeHash.length) + (16 + 4L * nodeParent.length)
          + (16 + 8L * nodeHolders.length)
          + nodeByHash.estimatedBytes()
          + (16 + 4L * byOrdinal.length) + (16 + 8L * registered.length)
          + 48 + 32L * views.size(); // the HashMap and its nodes
      for (View view : views.values()) {
        bytes += view.estimatedBytes();
      }
      return bytes;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /** Number of live nodes (pages), excluding the root; for tests and benchmarks. */
  int nodeCount() {
    long stamp = lock.readLock();
    try {
      return liveNodes;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * Walks the prompt's first {@code pages} pages from the root (at most the view's capacity), marking
   * each held by {@code view} and used at {@code now}, creating missing nodes.
   *
   * <p>Page {@code d} is linked just before page {@code d - 1} at the most recent end of the view's
   * list, so the touched pages end up ordered tail first and, at every step, each held page sits
   * behind all its held descendants. Hence when a new page needs room, the least recent entry is a
   * leaf of the view and not on this path: the touched pages are the {@code d < capacity} most recent
   * entries, and the view holds no page deeper on this path than the one being added.
   *
   * <p>Stops early only if a page hash collides with a node under another parent.
   */
  private void insertPath(View view, int[] tokens, int pages, long now) {
    long hash = PageHash.ROOT;
    int node = ROOT;
    int after = NIL; // entry of the previous page, which this page is linked just before
    for (int d = 0; d < pages; d++) {
      hash = PageHash.next(hash, tokens, d * pageSize, pageSize);
      int child = nodeByHash.get(hash);
      if (child != 0 && nodeParent[child] != node) {
        return; // 64-bit collision with a page elsewhere in the tree: index no deeper
      }
      int e = child == 0 ? NIL : view.entryOf.get(child, NIL);
      if (e == NIL) {
        if (view.size >= view.capacityPages) {
          evictLeastRecent(view);
        }
        if (child == 0) {
          child = allocateNode(hash, node);
        }
        e = view.newEntry(child);
        view.entryOf.putAbsent(child, e);
        nodeHolders[child * words + (view.ordinal >>> 6)] |= 1L << view.ordinal;
      } else {
        view.unlink(e);
      }
      if (after == NIL) {
        view.linkLast(e);
      } else {
        view.linkBefore(e, after);
      }
      view.entryTime[e] = now;
      after = e;
      node = child;
    }
  }

  /** Evicts {@code view}'s least recent pages (always leaves of its view) down to its capacity. */
  private void evictOverflow(View view) {
    while (view.size > view.capacityPages) {
      evictLeastRecent(view);
    }
  }

  /** Evicts {@code view}'s least recent page, which the list order guarantees is a leaf of its view. */
  private void evictLeastRecent(View view) {
    int e = view.head;
    int node = view.entryNode[e];
    view.unlink(e);
    view.freeEntry(e);
    view.entryOf.remove(node);
    releaseHolding(node, view.ordinal);
  }

  /** Clears {@code ordinal}'s bit on {@code node} and frees the node if nobody holds it any more. */
  private void releaseHolding(int node, int ordinal) {
    int row = node * words;
    nodeHolders[row + (ordinal >>> 6)] &= ~(1L << ordinal);
    for (int i = 0; i < words; i++) {
      if (nodeHolders[row + i] != 0) {
        return;
      }
    }
    // Held by nobody, so no child is held either (views are prefix-closed): it is a leaf.
    nodeByHash.remove(nodeHash[node]);
    nodeParent[node] = FREE;
    nodeHash[node] = freeNodes;
    freeNodes = node;
    liveNodes--;
  }

  private int allocateNode(long hash, int parent) {
    int node;
    if (freeNodes != NIL) {
      node = freeNodes;
      freeNodes = (int) nodeHash[node];
    } else {
      if (nodeHighWater == nodeParent.length) {
        int capacity = nodeParent.length * 2;
        nodeHash = Arrays.copyOf(nodeHash, capacity);
        nodeParent = Arrays.copyOf(nodeParent, capacity);
        nodeHolders = Arrays.copyOf(nodeHolders, capacity * words);
      }
      node = nodeHighWater++;
    }
    nodeHash[node] = hash;
    nodeParent[node] = parent;
    Arrays.fill(nodeHolders, node * words, node * words + words, 0L);
    nodeByHash.putAbsent(hash, node);
    liveNodes++;
    return node;
  }

  /** The lowest free ordinal, widening the holder bitmasks by one word when all are taken. */
  private int allocateOrdinal() {
    for (int i = 0; i < registered.length; i++) {
      if (registered[i] != -1L) {
        int ordinal = (i << 6) + Long.numberOfTrailingZeros(~registered[i]);
        registered[i] |= 1L << ordinal;
        return ordinal;
      }
    }
    int oldWords = words;
    int newWords = oldWords + 1;
    long[] widened = new long[nodeParent.length * newWords];
    for (int node = 0; node < nodeHighWater; node++) {
      System.arraycopy(nodeHolders, node * oldWords, widened, node * newWords, oldWords);
    }
    nodeHolders = widened;
    words = newWords;
    registered = Arrays.copyOf(registered, newWords);
    byOrdinal = Arrays.copyOf(byOrdinal, newWords * 64);
    int ordinal = oldWords << 6;
    registered[oldWords] = 1L;
    return ordinal;
  }

  @Override
  public void checkInvariants() {
    long stamp = lock.readLock();
    try {
      checkNodes();
      long holdings = 0;
      for (View view : views.values()) {
        checkView(view);
        holdings += view.size;
      }
      long bits = 0;
      for (int node = 1; node < nodeHighWater; node++) {
        if (nodeParent[node] != FREE) {
          for (int i = 0; i < words; i++) {
            bits += Long.bitCount(nodeHolders[node * words + i]);
          }
        }
      }
      check(bits == holdings, "holder bits %d != sum of backend sizes %d", bits, holdings);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  private void checkNodes() {
    check(nodeParent[ROOT] == NIL && nodeHash[ROOT] == PageHash.ROOT, "root sentinel overwritten");
    int free = 0;
    for (int node = freeNodes; node != NIL; node = (int) nodeHash[node]) {
      check(node > ROOT && node < nodeHighWater, "free list holds bad node %d", node);
      check(nodeParent[node] == FREE, "free list holds live node %d", node);
      check(++free <= nodeHighWater, "free list has a cycle");
    }
    int live = 0;
    for (int node = 1; node < nodeHighWater; node++) {
      int parent = nodeParent[node];
      if (parent == FREE) {
        continue;
      }
      live++;
      check(parent >= 0 && parent < nodeHighWater && parent != node,
          "node %d has bad parent %d", node, parent);
      check(parent == ROOT || nodeParent[parent] != FREE,
          "node %d is an orphan (parent %d is free)", node, parent);
      check(nodeByHash.get(nodeHash[node]) == node,
          "node %d is not found by its hash (parent/child link broken)", node);
      boolean held = false;
      for (int i = 0; i < words; i++) {
        long mask = nodeHolders[node * words + i];
        held |= mask != 0;
        check((mask & ~registered[i]) == 0,
            "node %d is held by unregistered ordinals %x", node, mask & ~registered[i]);
        if (parent != ROOT) {
          long parentMask = nodeHolders[parent * words + i];
          check((mask & ~parentMask) == 0,
              "node %d is held by ordinals %x that do not hold its parent %d (not prefix-closed)",
              node, mask & ~parentMask, parent);
        }
      }
      check(held, "node %d is held by no backend but was not removed", node);
    }
    check(live == liveNodes, "live node count %d != counter %d", live, liveNodes);
    check(live + free + 1 == nodeHighWater,
        "live %d + free %d + root != allocated %d", live, free, nodeHighWater);
    check(nodeByHash.size() == live, "hash map has %d entries for %d nodes", nodeByHash.size(), live);
  }

  private void checkView(View view) {
    int ordinal = view.ordinal;
    check(byOrdinal[ordinal] == view, "ordinal %d does not map back to %s", ordinal, view.id);
    check((registered[ordinal >>> 6] & (1L << ordinal)) != 0, "ordinal %d not registered", ordinal);
    check(view.size <= view.capacityPages, "%s holds %d pages over capacity %d",
        view.id, view.size, view.capacityPages);
    check(view.entryOf.size() == view.size, "%s entry map has %d entries for size %d",
        view.id, view.entryOf.size(), view.size);
    Map<Integer, Integer> position = new HashMap<>();
    int count = 0;
    int prev = NIL;
    long prevTime = Long.MIN_VALUE;
    for (int e = view.head; e != NIL; e = view.entryNext[e]) {
      check(count < view.size, "%s LRU list is longer than its size %d (cycle?)", view.id, view.size);
      check(view.entryPrev[e] == prev, "%s entry %d has prev %d, expected %d",
          view.id, e, view.entryPrev[e], prev);
      int node = view.entryNode[e];
      check(node > ROOT && node < nodeHighWater && nodeParent[node] != FREE,
          "%s entry %d points at dead node %d", view.id, e, node);
      check((nodeHolders[node * words + (ordinal >>> 6)] & (1L << ordinal)) != 0,
          "%s holds node %d but its bit is clear", view.id, node);
      check(view.entryOf.get(node, NIL) == e, "%s entry map does not map node %d to entry %d",
          view.id, node, e);
      check(view.entryTime[e] >= prevTime, "%s LRU list is out of time order at entry %d",
          view.id, e);
      position.put(node, count);
      prevTime = view.entryTime[e];
      prev = e;
      count++;
    }
    check(view.tail == prev, "%s tail %d != last entry %d", view.id, view.tail, prev);
    check(count == view.size, "%s LRU list has %d entries, size %d", view.id, count, view.size);
    for (Map.Entry<Integer, Integer> held : position.entrySet()) {
      int parent = nodeParent[held.getKey()];
      if (parent != ROOT) {
        Integer parentPosition = position.get(parent);
        check(parentPosition != null, "%s holds node %d but not its parent %d",
            view.id, held.getKey(), parent);
        check(parentPosition > held.getValue(),
            "%s would evict node %d before its child %d (not tail-first)",
            view.id, parent, held.getKey());
      }
    }
    for (int i = 1; i < nodeHighWater; i++) {
      if (nodeParent[i] != FREE
          && (nodeHolders[i * words + (ordinal >>> 6)] & (1L << ordinal)) != 0) {
        check(position.containsKey(i), "node %d has %s's bit but no entry", i, view.id);
      }
    }
  }

  private static void check(boolean condition, String format, Object... args) {
    if (!condition) {
      throw new IllegalStateException("PrefixIndex invariant violated: " + String.format(format, args));
    }
  }

  @Override
  public String toString() {
    long stamp = lock.readLock();
    try {
      return "PrefixIndex[pageSizeTokens=" + pageSize + ", backends=" + views.size()
          + ", nodes=" + liveNodes + "]";
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * One backend's view: its capacity, and one entry per page it holds in a doubly linked list from
   * least to most recently used, with a node-to-entry map. Entries are rows of parallel arrays,
   * recycled through a free list.
   */
  private static final class View {
    final BackendId id;
    final int ordinal;
    int capacityPages;
    int size;
    int head = NIL;
    int tail = NIL;
    int[] entryNode = new int[16];
    int[] entryPrev = new int[16];
    int[] entryNext = new int[16]; // for a free entry, the next free entry
    long[] entryTime = new long[16];
    int entryHighWater;
    int freeEntries = NIL;
    IntIntMap entryOf = new IntIntMap();

    View(BackendId id, int ordinal) {
      this.id = id;
      this.ordinal = ordinal;
    }

    int newEntry(int node) {
      int e;
      if (freeEntries != NIL) {
        e = freeEntries;
        freeEntries = entryNext[e];
      } else {
        if (entryHighWater == entryNode.length) {
          int capacity = Math.max(entryNode.length + 1, Math.min(entryNode.length * 2, capacityPages));
          entryNode = Arrays.copyOf(entryNode, capacity);
          entryPrev = Arrays.copyOf(entryPrev, capacity);
          entryNext = Arrays.copyOf(entryNext, capacity);
          entryTime = Arrays.copyOf(entryTime, capacity);
        }
        e = entryHighWater++;
      }
      entryNode[e] = node;
      size++;
      return e;
    }

    void freeEntry(int e) {
      entryNode[e] = ROOT;
      entryNext[e] = freeEntries;
      freeEntries = e;
      size--;
    }

    void unlink(int e) {
      int p = entryPrev[e];
      int n = entryNext[e];
      if (p == NIL) {
        head = n;
      } else {
        entryNext[p] = n;
      }
      if (n == NIL) {
        tail = p;
      } else {
        entryPrev[n] = p;
      }
    }

    void linkBefore(int e, int next) {
      int p = entryPrev[next];
      entryPrev[e] = p;
      entryNext[e] = next;
      entryPrev[next] = e;
      if (p == NIL) {
        head = e;
      } else {
        entryNext[p] = e;
      }
    }

    void linkLast(int e) {
      entryPrev[e] = tail;
      entryNext[e] = NIL;
      if (tail == NIL) {
        head = e;
      } else {
        entryNext[tail] = e;
      }
      tail = e;
    }

    /**
     * After a capacity cut, reallocates the entry arrays (renumbering entries in list order) if they
     * are more than twice the new capacity, so memory follows the configured capacity.
     */
    void shrinkToCapacity() {
      int target = Math.max(16, capacityPages);
      if (entryNode.length <= 2 * target) {
        return;
      }
      int[] node = new int[target];
      int[] prev = new int[target];
      int[] next = new int[target];
      long[] time = new long[target];
      IntIntMap map = new IntIntMap();
      int n = 0;
      for (int e = head; e != NIL; e = entryNext[e], n++) {
        node[n] = entryNode[e];
        prev[n] = n - 1;
        next[n] = n + 1;
        time[n] = entryTime[e];
        map.putAbsent(node[n], n);
      }
      if (n > 0) {
        next[n - 1] = NIL;
      }
      head = n == 0 ? NIL : 0;
      tail = n - 1;
      entryNode = node;
      entryPrev = prev;
      entryNext = next;
      entryTime = time;
      entryOf = map;
      entryHighWater = n;
      freeEntries = NIL;
    }

    long estimatedBytes() {
      return 64 + (16 + 4L * entryNode.length) * 3 + (16 + 8L * entryTime.length)
          + entryOf.estimatedBytes();
    }
  }
}
