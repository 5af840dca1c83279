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
 * Fixed-size pages make a node one row of a {@code long[]} (no object per node): its hash, its
 * parent, a child hint and its holders. The hint is the child most recently inserted under the node;
 * along a conversation it nearly always hits, and the rows of a path allocated together are
 * adjacent, so a descent mostly reads consecutive rows instead of probing the map. A hint is only
 * used after checking the hinted row's hash and parent, so a stale hint costs one map lookup.
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
 * O(1) per page, with no walk of the tree. A backend's node-to-entry lookup is a primitive hash map,
 * skipped when the entry sits where the previous insert of the same path left it (just before its
 * parent's entry), which is also when the entry needs no relinking.
 *
 * <p><b>Pins.</b> vLLM never evicts a block a running request holds, and frees a finished request's
 * blocks to the tail of its free queue (most recently used). {@link #insertAndPin} mirrors that: each
 * entry has a pin count, raised for every page of a routed prompt as an insert would touch it, and
 * lowered by the pin's release, which touches the pages again (used now, tail page first). Eviction
 * pops the list's least recent end; a pinned entry found there is unlinked instead (once per pin, so
 * eviction stays O(1) amortized) and linked back at the most recent end when its count reaches zero.
 * A prompt pins its whole chain from the root, so a pinned page's ancestors are pinned too (with at
 * least its count), and the first unpinned entry from the least recent end is a leaf of its view.
 * The pages a pinning insert adds are provisional until the view's next change (another insert, a
 * confirmation or end of any pin): they evict nothing until then, a view's capacity bounding {@code
 * size - provisional}. So a request the engine rejects at once, and abandons before anything else
 * happens on the backend, evicts nothing; under load the next routing decision settles the view, as
 * eviction at routing time did (which predicts the engine's cache better than waiting for the
 * request's first token: measured in docs/bench.md).
 *
 * <p><b>Memory.</b> Every live node is held by at least one backend and each backend holds at most
 * {@code floor(capacityTokens / pageSizeTokens)} pages (an insert evicts before it adds a page to a
 * full view, and is truncated to the capacity), so live nodes never exceed the sum of the capacities
 * in pages, except while pins hold a view above its capacity (a view whose every page is pinned
 * takes a pinned prompt's pages anyway, as the engine will hold them once it runs the request; the
 * release trims the view back). Bytes: per node a row of 16 + 8 x words plus 16 to 32 in the
 * page-hash map; per backend-held page 16 (links and time) + 4 (node) + 4 (pins) + 8 to 16 (entry
 * map). Rows and maps are sized to
 * cache lines so that a page costs about one cache miss per structure touched.
 *
 * <p><b>Thread safety.</b> One {@link StampedLock}: {@link #match}, {@link #sizeTokens},
 * {@link #estimatedBytes} and {@link #checkInvariants} take its read lock, so matches from several
 * event loops run in parallel; {@link #insert}, {@link #insertAndPin}, a pin's release,
 * {@link #addBackend} and {@link #removeBackend} take its write lock. StampedLock rather than ReentrantReadWriteLock because its read lock is a single
 * CAS without per-thread hold counts; nothing here re-enters the lock.
 */
final class RadixPrefixIndex implements PrefixIndex {
  private static final int ROOT = 0;
  private static final int FREE = Integer.MIN_VALUE;
  private static final int NIL = -1;
  private static final int INITIAL_NODES = 1024;
  // Node row layout: HASH, LINKS, then `words` holder bitmask words.
  private static final int HASH = 0; // chained page hash; for a free node, the next free node id
  private static final int LINKS = 1; // parent node id (FREE for a free node) << 32 | child hint
  private static final int HOLDERS = 2;
  // What a walk of a prompt's path does to each page (see walkPath).
  private static final int INSERT = 0;
  private static final int PIN = 1;
  private static final int UNPIN = 2;

  private final int pageSize;
  private final Ticker ticker;
  private final StampedLock lock = new StampedLock();

  private long[] nodes; // rows of `stride` longs; row 0 is the root sentinel (the empty prefix)
  private int stride = HOLDERS + 1;
  private int words = 1;
  private int nodeCapacity = INITIAL_NODES;
  private int nodeHighWater = 1; // rows below this have been used
  private int freeNodes = NIL; // head of the free-node list
  private int liveNodes; // excluding the root
  private final LongIntMap nodeByHash = new LongIntMap();

  // Backends by id and by dense ordinal.
  private final Map<BackendId, View> views = new HashMap<>();
  private View[] byOrdinal = new View[64];
  private long[] registered = new long[1];

  private long lastNanos = Long.MIN_VALUE;
  private int walkCreated; // pages the last walkPath added to its view

  RadixPrefixIndex(int pageSizeTokens, Ticker ticker) {
    if (pageSizeTokens <= 0) {
      throw new IllegalArgumentException(
          "pageSizeTokens: " + pageSizeTokens + " (expected: > 0)");
    }
    this.pageSize = pageSizeTokens;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    nodes = new long[INITIAL_NODES * stride];
    nodes[HASH] = PageHash.ROOT;
    nodes[LINKS] = links(NIL, 0);
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
      settle(view);
      trim(view);
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
      dropHoldings(view);
      byOrdinal[view.ordinal] = null;
      registered[view.ordinal >>> 6] &= ~(1L << view.ordinal);
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  @Override
  public void forget(BackendId backend) {
    Objects.requireNonNull(backend, "backend");
    long stamp = lock.writeLock();
    try {
      View old = views.get(backend);
      if (old == null) {
        return;
      }
      dropHoldings(old);
      View fresh = new View(backend, old.ordinal); // the old view's pins become no-ops
      fresh.capacityPages = old.capacityPages;
      views.put(backend, fresh);
      byOrdinal[old.ordinal] = fresh;
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /** Clears {@code view}'s holder bit on every page it holds and frees the pages nobody holds now. */
  private void dropHoldings(View view) {
    // Every bit first, then the frees: unlisted entries are not in list order, and a node freed
    // before a held child would orphan it.
    int word = HOLDERS + (view.ordinal >>> 6);
    long bit = 1L << view.ordinal;
    for (int e = 0; e < view.entryHighWater; e++) {
      if (view.entryNode[e] != ROOT) {
        nodes[view.entryNode[e] * stride + word] &= ~bit;
      }
    }
    for (int e = 0; e < view.entryHighWater; e++) {
      if (view.entryNode[e] != ROOT) {
        freeIfUnheld(view.entryNode[e]);
      }
    }
  }

  /**
   * A prompt whose page hashes are computed on first use and kept, so that a match and an insert of
   * the same prompt hash it once. Not thread-safe.
   */
  static final class HashedPrompt implements Prompt {
    private final int[] tokens;
    private final int pageSize;
    private final long[] hashes;
    private final long namespace;
    private int computed;

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

    /** The chained hash of page {@code d} (0-based), {@code d} below the number of whole pages. */
    long hash(int d) {
      while (computed <= d) {
        long parent = computed == 0 ? PageHash.root(namespace) : hashes[computed - 1];
        hashes[computed] = PageHash.next(parent, tokens, computed * pageSize, pageSize);
        computed++;
      }
      return hashes[d];
    }
  }

  @Override
  public Prompt prompt(int[] tokens) {
    return new HashedPrompt(tokens, pageSize, 0L);
  }

  @Override
  public Prompt prompt(int[] tokens, long namespace) {
    return new HashedPrompt(tokens, pageSize, namespace);
  }

  private HashedPrompt hashed(Prompt prompt) {
    Objects.requireNonNull(prompt, "prompt");
    if (prompt instanceof HashedPrompt h && h.pageSize == pageSize) {
      return h;
    }
    return new HashedPrompt(prompt.tokens(), pageSize, prompt.namespace());
  }

  @Override
  public PrefixMatch match(int[] tokens) {
    return match(prompt(tokens));
  }

  @Override
  public PrefixMatch match(Prompt prompt) {
    HashedPrompt p = hashed(prompt);
    int[] tokens = p.tokens;
    int pages = tokens.length / pageSize;
    long stamp = lock.readLock();
    try {
      int w = words;
      int s = stride;
      long[] rows = nodes;
      long[] active = Arrays.copyOf(registered, w);
      int[] matchedPages = new int[w * 64];
      boolean any = false;
      for (long word : active) {
        any |= word != 0;
      }
      long hash = PageHash.ROOT;
      int node = ROOT;
      int depth = 0;
      while (any && depth < pages) {
        hash = p.hash(depth);
        int child = hintedChild(rows, s, node, hash);
        if (child == 0) {
          child = nodeByHash.get(hash);
          if (child == 0 || parentOf(rows[child * s + LINKS]) != node) {
            break;
          }
        }
        any = false;
        int holders = child * s + HOLDERS;
        for (int i = 0; i < w; i++) {
          long before = active[i];
          long after = before & rows[holders + i];
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
    insert(backend, prompt(tokens));
  }

  @Override
  public void insert(BackendId backend, Prompt prompt) {
    insert(backend, prompt, INSERT);
  }

  @Override
  public Pin insertAndPin(BackendId backend, Prompt prompt) {
    return insert(backend, prompt, PIN);
  }

  private Pin insert(BackendId backend, Prompt prompt, int mode) {
    Objects.requireNonNull(backend, "backend");
    HashedPrompt p = hashed(prompt);
    int[] tokens = p.tokens;
    // Hash the pages an insert can reach before taking the lock (a match usually did already).
    int reachable = tokens.length / pageSize;
    if (reachable > 0) {
      p.hash(reachable - 1);
    }
    long stamp = lock.writeLock();
    try {
      View view = views.get(backend);
      if (view == null) {
        throw new IllegalArgumentException(
            "backend: " + backend + " is not registered (expected: addBackend first)");
      }
      int pages = Math.min(tokens.length / pageSize, view.capacityPages);
      if (pages == 0) {
        return Pin.NONE;
      }
      settle(view);
      long now = now();
      int walked = walkPath(view, p, pages, now, mode);
      Pin pin = Pin.NONE;
      if (mode == PIN && walked > 0) {
        PagePin pagePin = new PagePin(view, p, walked, walkCreated, now);
        view.provisional = walkCreated;
        view.provisionalPin = pagePin;
        pin = pagePin;
      }
      trim(view);
      return pin;
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /**
   * The time of a walk: the ticker's, made strictly increasing, so that a page's last-use time also
   * tells whether any walk has passed it since (see {@link PagePin#abandon}).
   */
  private long now() {
    long now = Math.max(ticker.nanos(), lastNanos + 1);
    lastNanos = now;
    return now;
  }

  /**
   * The pins one {@link #insertAndPin} took: the first {@code pages} pages of {@code prompt} in
   * {@code view}. Released once; a no-op if the view was removed meanwhile (even if its backend was
   * added again: that is a new view).
   */
  private final class PagePin implements Pin {
    private final View view;
    private final HashedPrompt prompt;
    private final int pages;
    private final int created;
    private final long walkTime;
    private boolean released; // guarded by the write lock

    /**
     * @param created how many of the pages (the deepest ones) the pinning insert added to the view
     * @param walkTime the pinning insert's time, which those pages keep until another walk passes
     */
    PagePin(View view, HashedPrompt prompt, int pages, int created, long walkTime) {
      this.view = view;
      this.prompt = prompt;
      this.pages = pages;
      this.created = created;
      this.walkTime = walkTime;
    }

    @Override
    public void confirm() {
      if (view.provisionalPin != this) {
        // the usual case under load: a later change already settled the view; no write lock taken
        // (an unsynchronized read: a stale answer either way only delays the settling to that change)
        return;
      }
      long stamp = lock.writeLock();
      try {
        if (!released && views.get(view.id) == view && view.provisionalPin == this) {
          settle(view);
          trim(view);
        }
      } finally {
        lock.unlockWrite(stamp);
      }
    }

    @Override
    public void release() {
      end(false);
    }

    @Override
    public void abandon() {
      end(true);
    }

    private void end(boolean abandoned) {
      long stamp = lock.writeLock();
      try {
        if (released) {
          return;
        }
        released = true;
        if (views.get(view.id) != view) {
          return;
        }
        settle(view);
        int kept = pages;
        if (abandoned && created > 0) {
          kept = pages - removeUntouched(view, prompt, pages, created, walkTime);
        }
        walkPath(view, prompt, kept, now(), UNPIN);
        trim(view);
      } finally {
        lock.unlockWrite(stamp);
      }
    }
  }

  /**
   * Removes from {@code view}, deepest first, the last {@code created} of the prompt's first
   * {@code pages} pages for as long as each is still exactly as the pinning insert left it: used at
   * {@code walkTime} (no walk has passed it since, so no other request has used it or added a page
   * under it) and pinned once (by that insert). Each removed page is then a leaf. Returns how many
   * were removed.
   */
  private int removeUntouched(View view, HashedPrompt prompt, int pages, int created, long walkTime) {
    int[] entries = new int[pages];
    int node = ROOT;
    for (int d = 0; d < pages; d++) {
      long hash = prompt.hash(d);
      int child = hintedChild(nodes, stride, node, hash);
      if (child == 0) {
        child = nodeByHash.get(hash);
        if (child == 0 || parentOf(nodes[child * stride + LINKS]) != node) {
          return 0; // the path is not as pinned (cannot happen while the pin holds it)
        }
      }
      entries[d] = view.entryOf.get(child, NIL);
      if (entries[d] == NIL) {
        return 0;
      }
      node = child;
    }
    int removed = 0;
    for (int d = pages - 1; d >= pages - created; d--) {
      int e = entries[d];
      if (view.pins[e] != 1 || view.time(e) != walkTime) {
        break;
      }
      removeEntry(view, e);
      removed++;
    }
    return removed;
  }

  /** Drops entry {@code e} (a leaf of its view) from {@code view}, pinned or not. */
  private void removeEntry(View view, int e) {
    int node = view.entryNode[e];
    if (view.listed(e)) {
      view.unlink(e);
    }
    if (view.pins[e] > 0) {
      view.pins[e] = 0;
      view.pinned--;
    }
    view.freeEntry(e);
    view.entryOf.remove(node);
    nodes[node * stride + HOLDERS + (view.ordinal >>> 6)] &= ~(1L << view.ordinal);
    freeIfUnheld(node);
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
          + (16 + 8L * nodes.length)
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
   * each held by {@code view} and used at {@code now} and creating missing nodes ({@link #INSERT});
   * {@link #PIN} also raises each page's pin count; {@link #UNPIN} lowers it, creates nothing, and
   * links back the unlisted pages whose count reaches zero. Unlisted (pinned) pages are otherwise left
   * out of the list: they are not evictable, and their last release relinks them.
   *
   * <p>A listed page {@code d} is linked just before the previous listed page of the path at the most
   * recent end of the view's list, so the path's listed pages end up ordered tail first and, at every
   * step, each listed page sits behind all its listed descendants. Hence when a new page needs room,
   * the first unpinned entry from the least recent end is a leaf of the view (its children are listed
   * before it or unlisted, and unlisted pages are pinned, and a page with a pinned child is pinned),
   * and it is not on this path unless every listed entry is, in which case the least recent entry is
   * the previous page ({@code after}) and nothing is evicted: the view grows past its capacity and
   * {@link #trim} cuts it back from the least recent end once the walk is done.
   *
   * <p>Returns the number of pages walked: {@code pages}, or fewer if a page hash collides with a
   * node under another parent (or, for an unpin, if a page is not held, which a live pin prevents).
   */
  private int walkPath(View view, HashedPrompt prompt, int pages, long now, int mode) {
    long bit = 1L << view.ordinal;
    int word = HOLDERS + (view.ordinal >>> 6);
    long hash = PageHash.ROOT;
    int node = ROOT;
    int after = NIL; // entry of the previous listed page, which this page is linked just before
    int guess = NIL; // where the last insert of this path left this page's entry
    walkCreated = 0;
    for (int d = 0; d < pages; d++) {
      hash = prompt.hash(d);
      int child = hintedChild(nodes, stride, node, hash);
      if (child == 0) {
        child = nodeByHash.get(hash);
        if (child != 0 && parentOf(nodes[child * stride + LINKS]) != node) {
          return d; // 64-bit collision with a page elsewhere in the tree: index no deeper
        }
      }
      int e;
      if (child == 0) {
        e = NIL;
      } else if (guess != NIL && view.entryNode[guess] == child) {
        e = guess;
      } else {
        e = view.entryOf.get(child, NIL);
      }
      guess = NIL;
      if (e == NIL) {
        if (mode == UNPIN) {
          return d;
        }
        // a pinning insert's new pages are provisional: they take no room yet
        if (mode != PIN && view.size - view.provisional >= view.capacityPages) {
          evictLeastRecent(view, after);
        }
        if (child == 0) {
          child = allocateNode(hash, node);
        }
        e = view.newEntry(child);
        view.entryOf.putAbsent(child, e);
        nodes[child * stride + word] |= bit;
        link(view, e, after, now);
        after = e;
        walkCreated++;
        if (mode == PIN) {
          view.pin(e);
        }
      } else if (!view.listed(e)) {
        // Pinned and unlinked by an eviction: stays out of the list until its last release.
        if (mode == PIN) {
          view.pins[e]++;
        }
        if (mode == UNPIN && view.unpin(e)) {
          link(view, e, after, now);
          after = e;
        } else {
          view.touch(e, now); // its time only tells that a walk passed (PagePin#abandon)
        }
      } else {
        if (mode == PIN) {
          view.pin(e);
        } else if (mode == UNPIN) {
          view.unpin(e);
        }
        // Tail-first linking left the child's entry just before this one, unless another insert
        // moved either since.
        guess = view.prev(e);
        if (after == NIL ? e == view.tail : view.next(e) == after) {
          view.touch(e, now); // already in place
        } else {
          view.unlink(e);
          link(view, e, after, now);
        }
        after = e;
      }
      int parentLinks = node * stride + LINKS;
      if ((int) nodes[parentLinks] != child) {
        nodes[parentLinks] = links(parentOf(nodes[parentLinks]), child);
      }
      node = child;
    }
    return pages;
  }

  private static void link(View view, int e, int after, long now) {
    if (after == NIL) {
      view.linkLast(e, now);
    } else {
      view.linkBefore(e, after, now);
    }
  }

  /**
   * The child of {@code node} with page hash {@code hash} if it is the node's hinted child (the
   * child most recently inserted under it), else 0. Along a conversation the hint nearly always
   * hits, and the rows of a path allocated together sit next to each other, so the descent avoids
   * the random access into the page-hash map.
   */
  private static int hintedChild(long[] rows, int stride, int node, long hash) {
    int hint = (int) rows[node * stride + LINKS];
    if (hint > 0) {
      int row = hint * stride;
      if (rows[row + HASH] == hash && parentOf(rows[row + LINKS]) == node) {
        return hint;
      }
    }
    return 0;
  }

  private static long links(int parent, int hint) {
    return ((long) parent << 32) | (hint & 0xFFFFFFFFL);
  }

  private static int parentOf(long links) {
    return (int) (links >> 32);
  }

  /** Ends the provisional state of the last pinning insert's pages: from now on they count. */
  private static void settle(View view) {
    view.provisional = 0;
    view.provisionalPin = null;
  }

  /** Evicts {@code view}'s least recent unpinned pages while it is over capacity and any are left. */
  private void trim(View view) {
    while (view.size - view.provisional > view.capacityPages && evictLeastRecent(view, NIL)) {
      // one page per step
    }
  }

  /**
   * Evicts {@code view}'s least recent unpinned page, which the list order guarantees is a leaf of
   * its view, unlinking the pinned entries in front of it. Evicts nothing if the list runs out or
   * reaches {@code stop} (the entry an insert in progress will link its next page before). Returns
   * whether a page was evicted.
   */
  private boolean evictLeastRecent(View view, int stop) {
    int e = view.head;
    while (e != NIL && e != stop && view.pins[e] > 0) {
      view.unlink(e);
      view.markUnlisted(e);
      e = view.head;
    }
    if (e == NIL || e == stop) {
      return false;
    }
    int node = view.entryNode[e];
    view.unlink(e);
    view.freeEntry(e);
    view.entryOf.remove(node);
    nodes[node * stride + HOLDERS + (view.ordinal >>> 6)] &= ~(1L << view.ordinal);
    freeIfUnheld(node);
    return true;
  }

  /** Frees {@code node} if no backend holds it any more. */
  private void freeIfUnheld(int node) {
    int row = node * stride;
    for (int i = 0; i < words; i++) {
      if (nodes[row + HOLDERS + i] != 0) {
        return;
      }
    }
    // Held by nobody, so no child is held either (views are prefix-closed): it is a leaf.
    nodeByHash.remove(nodes[row + HASH]);
    nodes[row + LINKS] = links(FREE, 0);
    nodes[row + HASH] = freeNodes;
    freeNodes = node;
    liveNodes--;
  }

  private int allocateNode(long hash, int parent) {
    int node;
    if (freeNodes != NIL) {
      node = freeNodes;
      freeNodes = (int) nodes[node * stride + HASH];
    } else {
      if (nodeHighWater == nodeCapacity) {
        nodeCapacity *= 2;
        nodes = Arrays.copyOf(nodes, nodeCapacity * stride);
      }
      node = nodeHighWater++;
    }
    int row = node * stride;
    nodes[row + HASH] = hash;
    nodes[row + LINKS] = links(parent, 0);
    Arrays.fill(nodes, row + HOLDERS, row + stride, 0L);
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
    int oldStride = stride;
    int newStride = oldStride + 1;
    long[] widened = new long[nodeCapacity * newStride];
    for (int node = 0; node < nodeHighWater; node++) {
      System.arraycopy(nodes, node * oldStride, widened, node * newStride, oldStride);
    }
    nodes = widened;
    stride = newStride;
    int ordinal = words << 6;
    words++;
    registered = Arrays.copyOf(registered, words);
    byOrdinal = Arrays.copyOf(byOrdinal, words * 64);
    registered[words - 1] = 1L;
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
        if (parentOf(nodes[node * stride + LINKS]) != FREE) {
          for (int i = 0; i < words; i++) {
            bits += Long.bitCount(nodes[node * stride + HOLDERS + i]);
          }
        }
      }
      check(bits == holdings, "holder bits %d != sum of backend sizes %d", bits, holdings);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  private void checkNodes() {
    check(parentOf(nodes[LINKS]) == NIL && nodes[HASH] == PageHash.ROOT,
        "root sentinel overwritten");
    check(stride == HOLDERS + words && nodes.length == nodeCapacity * stride,
        "node rows: stride %d, words %d, length %d", stride, words, nodes.length);
    int free = 0;
    for (int node = freeNodes; node != NIL; node = (int) nodes[node * stride + HASH]) {
      check(node > ROOT && node < nodeHighWater, "free list holds bad node %d", node);
      check(parentOf(nodes[node * stride + LINKS]) == FREE, "free list holds live node %d", node);
      check(++free <= nodeHighWater, "free list has a cycle");
    }
    int live = 0;
    for (int node = 1; node < nodeHighWater; node++) {
      int row = node * stride;
      int parent = parentOf(nodes[row + LINKS]);
      if (parent == FREE) {
        continue;
      }
      live++;
      check(parent >= 0 && parent < nodeHighWater && parent != node,
          "node %d has bad parent %d", node, parent);
      int hint = (int) nodes[row + LINKS];
      check(hint >= 0 && hint < nodeHighWater, "node %d has bad child hint %d", node, hint);
      check(parent == ROOT || parentOf(nodes[parent * stride + LINKS]) != FREE,
          "node %d is an orphan (parent %d is free)", node, parent);
      check(nodeByHash.get(nodes[row + HASH]) == node,
          "node %d is not found by its hash (parent/child link broken)", node);
      boolean held = false;
      for (int i = 0; i < words; i++) {
        long mask = nodes[row + HOLDERS + i];
        held |= mask != 0;
        check((mask & ~registered[i]) == 0,
            "node %d is held by unregistered ordinals %x", node, mask & ~registered[i]);
        if (parent != ROOT) {
          long parentMask = nodes[parent * stride + HOLDERS + i];
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
    int word = HOLDERS + (ordinal >>> 6);
    long bit = 1L << ordinal;
    check(byOrdinal[ordinal] == view, "ordinal %d does not map back to %s", ordinal, view.id);
    check((registered[ordinal >>> 6] & bit) != 0, "ordinal %d not registered", ordinal);
    check(view.provisional >= 0 && view.provisional <= view.size, "%s has %d provisional pages of %d",
        view.id, view.provisional, view.size);
    check(view.size - view.provisional <= view.capacityPages || view.head == NIL,
        "%s holds %d pages (%d provisional) over capacity %d with unpinned pages left to evict",
        view.id, view.size, view.provisional, view.capacityPages);
    check(view.entryOf.size() == view.size, "%s entry map has %d entries for size %d",
        view.id, view.entryOf.size(), view.size);
    Map<Integer, Integer> position = new HashMap<>();
    int count = 0;
    int prev = NIL;
    long prevTime = Long.MIN_VALUE;
    for (int e = view.head; e != NIL; e = view.next(e)) {
      check(count < view.size, "%s LRU list is longer than its size %d (cycle?)", view.id, view.size);
      check(view.prev(e) == prev, "%s entry %d has prev %d, expected %d",
          view.id, e, view.prev(e), prev);
      int node = view.entryNode[e];
      check(node > ROOT && node < nodeHighWater && parentOf(nodes[node * stride + LINKS]) != FREE,
          "%s entry %d points at dead node %d", view.id, e, node);
      check((nodes[node * stride + word] & bit) != 0,
          "%s holds node %d but its bit is clear", view.id, node);
      check(view.entryOf.get(node, NIL) == e, "%s entry map does not map node %d to entry %d",
          view.id, node, e);
      check(view.time(e) >= prevTime, "%s LRU list is out of time order at entry %d", view.id, e);
      position.put(node, count);
      prevTime = view.time(e);
      prev = e;
      count++;
    }
    check(view.tail == prev, "%s tail %d != last entry %d", view.id, view.tail, prev);
    int listed = count;
    Map<Integer, Integer> unlisted = new HashMap<>();
    Map<Integer, Integer> pinCount = new HashMap<>();
    for (int e = 0; e < view.entryHighWater; e++) {
      int node = view.entryNode[e];
      if (node == ROOT) {
        continue;
      }
      if (view.pins[e] > 0) {
        pinCount.put(node, view.pins[e]);
      }
      if (view.listed(e)) {
        check(position.containsKey(node), "%s entry %d of node %d is neither listed nor free",
            view.id, e, node);
        continue;
      }
      check(view.pins[e] > 0, "%s entry %d is out of the LRU list but not pinned", view.id, e);
      check(parentOf(nodes[node * stride + LINKS]) != FREE && (nodes[node * stride + word] & bit) != 0,
          "%s unlisted entry %d points at node %d it does not hold", view.id, e, node);
      check(view.entryOf.get(node, NIL) == e, "%s entry map does not map unlisted node %d to entry %d",
          view.id, node, e);
      check(!position.containsKey(node), "%s node %d is both listed and unlisted", view.id, node);
      unlisted.put(node, e);
      count++;
    }
    check(pinCount.size() == view.pinned, "%s has %d pinned entries, counter %d",
        view.id, pinCount.size(), view.pinned);
    check(count == view.size, "%s has %d listed + %d unlisted entries, size %d",
        view.id, listed, unlisted.size(), view.size);
    for (Map.Entry<Integer, Integer> held : pinCount.entrySet()) {
      int parent = parentOf(nodes[held.getKey() * stride + LINKS]);
      if (parent != ROOT) {
        Integer parentPins = pinCount.get(parent);
        check(parentPins != null && parentPins >= held.getValue(),
            "%s node %d has %d pins but its parent %d has %s (a pin covers a whole chain)",
            view.id, held.getKey(), held.getValue(), parent, parentPins);
      }
    }
    for (Map.Entry<Integer, Integer> held : position.entrySet()) {
      int parent = parentOf(nodes[held.getKey() * stride + LINKS]);
      if (parent != ROOT && !unlisted.containsKey(parent)) {
        Integer parentPosition = position.get(parent);
        check(parentPosition != null, "%s holds node %d but not its parent %d",
            view.id, held.getKey(), parent);
        check(parentPosition > held.getValue(),
            "%s would evict node %d before its child %d (not tail-first)",
            view.id, parent, held.getKey());
      }
    }
    for (int node = 1; node < nodeHighWater; node++) {
      if (parentOf(nodes[node * stride + LINKS]) != FREE && (nodes[node * stride + word] & bit) != 0) {
        check(position.containsKey(node) || view.entryOf.get(node, NIL) != NIL,
            "node %d has %s's bit but no entry", node, view.id);
      }
    }
  }

  private static void check(boolean condition, String format, Object... args) {
    if (!condition) {
      throw new IllegalStateException(
          "PrefixIndex invariant violated: " + String.format(format, args));
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
   * One backend's view: its capacity, and one entry per page it holds, with a node-to-entry map.
   * Entries are in a doubly linked list from least to most recently used, except pinned entries that
   * an eviction unlinked (their previous link is {@code UNLISTED}). An entry is a 16-byte row of
   * {@code links} (previous and next entry packed in one long, then the last-use time) plus its node
   * in {@code entryNode} and its pin count in {@code pins}; entries are recycled through a free list.
   */
  private static final class View {
    private static final long LOW = 0xFFFFFFFFL;
    private static final int UNLISTED = -2;

    final BackendId id;
    final int ordinal;
    int capacityPages;
    int size;
    int pinned; // entries with pins > 0
    int provisional; // pages the last pinning insert added, until the view's next change
    Pin provisionalPin; // that insert's pin
    int head = NIL;
    int tail = NIL;
    long[] links = new long[2 * 16]; // entry e: [2e] = prev << 32 | next, [2e + 1] = time
    int[] entryNode = new int[16];
    int[] pins = new int[16];
    int entryHighWater;
    int freeEntries = NIL; // chained through the next field
    IntIntMap entryOf = new IntIntMap();

    View(BackendId id, int ordinal) {
      this.id = id;
      this.ordinal = ordinal;
    }

    int prev(int e) {
      return (int) (links[2 * e] >> 32);
    }

    int next(int e) {
      return (int) links[2 * e];
    }

    long time(int e) {
      return links[2 * e + 1];
    }

    private void setPrev(int e, int prev) {
      links[2 * e] = ((long) prev << 32) | (links[2 * e] & LOW);
    }

    private void setNext(int e, int next) {
      links[2 * e] = (links[2 * e] & ~LOW) | (next & LOW);
    }

    int newEntry(int node) {
      int e;
      if (freeEntries != NIL) {
        e = freeEntries;
        freeEntries = next(e);
      } else {
        if (entryHighWater == entryNode.length) {
          int capacity =
              Math.max(entryNode.length + 1, Math.min(entryNode.length * 2, capacityPages));
          entryNode = Arrays.copyOf(entryNode, capacity);
          pins = Arrays.copyOf(pins, capacity);
          links = Arrays.copyOf(links, 2 * capacity);
        }
        e = entryHighWater++;
      }
      entryNode[e] = node;
      size++;
      return e;
    }

    /** Raises {@code e}'s pin count. */
    void pin(int e) {
      if (pins[e]++ == 0) {
        pinned++;
      }
    }

    /** Lowers {@code e}'s pin count if it has pins; returns whether that was the last one. */
    boolean unpin(int e) {
      if (pins[e] == 0) {
        return false;
      }
      if (--pins[e] == 0) {
        pinned--;
        return true;
      }
      return false;
    }

    /** Whether {@code e} is in the list (every entry is, except pinned ones an eviction unlinked). */
    boolean listed(int e) {
      return prev(e) != UNLISTED;
    }

    /** Marks {@code e}, just unlinked, as out of the list. */
    void markUnlisted(int e) {
      setPrev(e, UNLISTED);
    }

    void freeEntry(int e) {
      entryNode[e] = ROOT;
      links[2 * e] = (NIL & ~LOW) | (freeEntries & LOW);
      freeEntries = e;
      size--;
    }

    void unlink(int e) {
      long l = links[2 * e];
      int p = (int) (l >> 32);
      int n = (int) l;
      if (p == NIL) {
        head = n;
      } else {
        setNext(p, n);
      }
      if (n == NIL) {
        tail = p;
      } else {
        setPrev(n, p);
      }
    }

    void linkBefore(int e, int next, long now) {
      int p = prev(next);
      links[2 * e] = ((long) p << 32) | (next & LOW);
      links[2 * e + 1] = now;
      setPrev(next, e);
      if (p == NIL) {
        head = e;
      } else {
        setNext(p, e);
      }
    }

    void touch(int e, long now) {
      links[2 * e + 1] = now;
    }

    void linkLast(int e, long now) {
      links[2 * e] = ((long) tail << 32) | (NIL & LOW);
      links[2 * e + 1] = now;
      if (tail == NIL) {
        head = e;
      } else {
        setNext(tail, e);
      }
      tail = e;
    }

    /**
     * After a capacity cut, reallocates the entries (renumbered in list order) if their arrays are
     * more than twice the new capacity, so memory follows the configured capacity.
     */
    void shrinkToCapacity() {
      int target = Math.max(16, Math.max(capacityPages, size));
      if (entryNode.length <= 2L * target) {
        return;
      }
      long[] newLinks = new long[2 * target];
      int[] newNode = new int[target];
      int[] newPins = new int[target];
      IntIntMap map = new IntIntMap(size);
      int n = 0;
      for (int e = head; e != NIL; e = next(e), n++) {
        newNode[n] = entryNode[e];
        newPins[n] = pins[e];
        newLinks[2 * n] = ((long) (n - 1) << 32) | ((n + 1) & LOW);
        newLinks[2 * n + 1] = time(e);
        map.putAbsent(newNode[n], n);
      }
      int listed = n;
      if (listed > 0) {
        newLinks[2 * (listed - 1)] = ((long) (listed - 2) << 32) | (NIL & LOW);
      }
      for (int e = 0; e < entryHighWater; e++) {
        if (entryNode[e] != ROOT && !listed(e)) {
          newNode[n] = entryNode[e];
          newPins[n] = pins[e];
          newLinks[2 * n] = ((long) UNLISTED << 32) | (NIL & LOW);
          newLinks[2 * n + 1] = time(e);
          map.putAbsent(newNode[n], n);
          n++;
        }
      }
      head = listed == 0 ? NIL : 0;
      tail = listed - 1;
      links = newLinks;
      entryNode = newNode;
      pins = newPins;
      entryOf = map;
      entryHighWater = n;
      freeEntries = NIL;
    }

    long estimatedBytes() {
      return 64 + (16 + 8L * links.length) + (16 + 4L * entryNode.length)
          + (16 + 4L * pins.length) + entryOf.estimatedBytes();
    }
  }
}
