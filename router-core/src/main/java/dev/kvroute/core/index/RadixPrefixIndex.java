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
 * primitive arrays. This class walks prompts through two kinds of storage and keeps them consistent:
 * the {@link NodeTable} (the page nodes and which backends hold each) and one {@link RecencyView}
 * per backend (the pages it holds in recency order, with pin counts).
 *
 * <p><b>Nodes.</b> A node is one page, identified by its chained {@link PageHash} and found through
 * one global hash map from page hash to node id; the chain makes that map double as every node's
 * child map. Nodes are single pages rather than compressed runs because holding, recency and eviction
 * are per page (as in vLLM's block pool): with runs, every divergence between two backends' views and
 * every tail eviction would split a run, and per-backend state would have to be kept per run segment.
 * Layout and child hints are described in {@link NodeTable}.
 *
 * <p><b>Holders.</b> Each node stores a bitmask of the backends that hold it (one bit per dense
 * backend ordinal, so any number of backends works and up to 64 cost one long). A backend's view is
 * prefix-closed (if it holds a page it holds the page's parent), so its match is the depth at which
 * its bit first drops out during one descent.
 *
 * <p><b>Recency and eviction.</b> Each backend's {@link RecencyView} is a doubly linked list of
 * entries, one per page it holds, with the time the page was last used. An insert moves the prompt's
 * pages to the most-recent end in reverse order (tail page first, first page last), so every page sits
 * behind all its descendants in the list: the least recent entry is always a leaf of that backend's
 * view, and popping it is both LRU and tail-first, the order vLLM's free-block queue evicts in.
 * Eviction is O(1) per page, with no walk of the tree. A backend's node-to-entry lookup is a
 * primitive hash map, skipped when the entry sits where the previous insert of the same path left it
 * (just before its parent's entry), which is also when the entry needs no relinking.
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
 * <p><b>Bounds.</b> Every operation is O(pages of the prompt) amortized (a walk touches each page
 * once; each eviction is O(1) and pays for an earlier insert). A view holds at most twice its
 * capacity ({@link RecencyView#limitPages}): a provisional insert or pins may take it past its
 * capacity (a view whose every page is pinned takes a pinned prompt's pages anyway, as the engine will
 * hold them once it runs the request), but an insert that would take it past twice its capacity stops
 * there, indexing only the prompt's first pages for that backend. So live nodes never exceed twice
 * the sum of the capacities in pages. Bytes: per node a row of 16 + 8 x words plus 16 to 32 in the
 * page-hash map; per backend-held page 16 (links and time) + 4 (node) + 4 (pins) + 8 to 16 (entry
 * map). Rows and maps are sized to cache lines so that a page costs about one cache miss per
 * structure touched.
 *
 * <p>About 770 lines, as one unit after its storage went to {@code NodeTable}, {@code RecencyView}
 * and {@code PagePin}: what remains is the descent, the inserts, a pin's end (over the entries the
 * pin recorded) and the eviction that keep a node's holder bits and every backend's view consistent
 * under one lock, which cannot be split without splitting that invariant.
 *
 * <p><b>Thread safety.</b> One {@link StampedLock}: {@link #match}, {@link #sizeTokens},
 * {@link #estimatedBytes} and {@link #checkInvariants} take its read lock, so matches from several
 * event loops run in parallel; {@link #insert}, {@link #insertAndPin}, a pin's confirmation and
 * release, {@link #addBackend}, {@link #removeBackend} and {@link #forget} take its write lock.
 * StampedLock rather than ReentrantReadWriteLock because its read lock is a single CAS without
 * per-thread hold counts; nothing here re-enters the lock. A prompt's page hashes are computed
 * before the write lock is taken.
 */
final class RadixPrefixIndex implements PrefixIndex {
  private static final int ROOT = NodeTable.ROOT;
  private static final int NIL = NodeTable.NIL;
  // What a walk of a prompt's path does to each page (see walkPath).
  private static final int INSERT = 0;
  private static final int PIN = 1;

  private final int pageSize;
  private final Ticker ticker;
  private final StampedLock lock = new StampedLock();
  private final NodeTable nodes = new NodeTable();

  // Backends by id and by dense ordinal.
  private final Map<BackendId, RecencyView> views = new HashMap<>();
  private RecencyView[] byOrdinal = new RecencyView[64];
  private long[] registered = new long[1];
  /** Every backend's ordinal: an immutable snapshot, replaced when a backend is added or removed. */
  private Map<BackendId, Integer> ordinals = Map.of();

  private long lastNanos = Long.MIN_VALUE;
  private long corrections; // pages evicted by engine reports (guarded by the write lock)
  private int walkCreated; // pages the last walkPath added to its view
  private long[] walkOldTimes; // a pinning walk's record of each held page's last use before it (or null)
  private int[] walkEntries; // a pinning walk's record of each page's entry in the view (or null)

  RadixPrefixIndex(int pageSizeTokens, Ticker ticker) {
    if (pageSizeTokens <= 0) {
      throw new IllegalArgumentException(
          "pageSizeTokens: " + pageSizeTokens + " (expected: > 0)");
    }
    this.pageSize = pageSizeTokens;
    this.ticker = Objects.requireNonNull(ticker, "ticker");
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
      RecencyView view = views.get(backend);
      if (view == null) {
        view = new RecencyView(backend, allocateOrdinal());
        views.put(backend, view);
        byOrdinal[view.ordinal] = view;
        snapshotOrdinals();
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
      RecencyView view = views.remove(backend);
      if (view == null) {
        return;
      }
      dropHoldings(view);
      byOrdinal[view.ordinal] = null;
      registered[view.ordinal >>> 6] &= ~(1L << view.ordinal);
      snapshotOrdinals();
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  @Override
  public void forget(BackendId backend) {
    Objects.requireNonNull(backend, "backend");
    long stamp = lock.writeLock();
    try {
      RecencyView old = views.get(backend);
      if (old == null) {
        return;
      }
      dropHoldings(old);
      RecencyView fresh = new RecencyView(backend, old.ordinal); // the old view's pins become no-ops
      fresh.capacityPages = old.capacityPages;
      views.put(backend, fresh);
      byOrdinal[old.ordinal] = fresh;
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  private void snapshotOrdinals() {
    Map<BackendId, Integer> m = new HashMap<>();
    for (RecencyView v : views.values()) {
      m.put(v.id, v.ordinal);
    }
    ordinals = Map.copyOf(m);
  }

  /** Clears {@code view}'s holder bit on every page it holds and frees the pages nobody holds now. */
  private void dropHoldings(RecencyView view) {
    // Every bit first, then the frees: unlisted entries are not in list order, and a node freed
    // before a held child would orphan it.
    int ordinal = view.ordinal;
    view.forEachNode(node -> nodes.unhold(node, ordinal));
    view.forEachNode(nodes::freeIfUnheld);
  }

  @Override
  public Prompt prompt(int[] tokens) {
    return new HashedPrompt(tokens, pageSize, 0L);
  }

  @Override
  public Prompt prompt(int[] tokens, long namespace) {
    return new HashedPrompt(tokens, pageSize, namespace);
  }

  @Override
  public Prompt prompt(int[] tokens, long namespace, PageHashes known, int sharedTokens) {
    return prompt(SegmentedTokens.of(tokens), namespace, known, sharedTokens);
  }

  @Override
  public Prompt prompt(SegmentedTokens tokens, long namespace, PageHashes known, int sharedTokens) {
    Objects.requireNonNull(known, "known");
    if (sharedTokens < 0 || sharedTokens > tokens.length()) {
      throw new IllegalArgumentException("sharedTokens: " + sharedTokens + " (expected: 0 to "
          + tokens.length() + ", the prompt's tokens)");
    }
    if (!known.fits(pageSize, namespace)) {
      return new HashedPrompt(tokens, pageSize, namespace);
    }
    return new HashedPrompt(tokens, pageSize, namespace, known, Math.min(known.pages(), sharedTokens / pageSize));
  }

  private HashedPrompt hashed(Prompt prompt) {
    Objects.requireNonNull(prompt, "prompt");
    if (prompt instanceof HashedPrompt h && h.pageSize() == pageSize) {
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
    int pages = p.pages();
    long stamp = lock.readLock();
    try {
      NodeTable table = nodes;
      int w = table.words();
      long[] active = Arrays.copyOf(registered, w);
      int[] matchedPages = new int[w * 64];
      boolean any = false;
      for (long word : active) {
        any |= word != 0;
      }
      int node = ROOT;
      int depth = 0;
      // the words [lo, hi) may still hold active backends: a word that empties stays empty, and past
      // a shared system prompt usually one or two backends remain, so a page costs one or two words
      // whatever the fleet's size
      int lo = 0;
      int hi = w;
      int[] path = p.pathBuffer();
      while (any && depth < pages) {
        int child = table.child(node, p.hash(depth));
        if (child <= 0) {
          break;
        }
        path[depth] = table.hinted(node, child) ? child : -child; // negative: an insert re-hints
        any = false;
        for (int i = lo; i < hi; i++) {
          long before = active[i];
          long after = before & table.holders(child, i);
          for (long dropped = before & ~after; dropped != 0; dropped &= dropped - 1) {
            matchedPages[(i << 6) + Long.numberOfTrailingZeros(dropped)] = depth;
          }
          active[i] = after;
          any |= after != 0;
        }
        while (lo < hi && active[lo] == 0) {
          lo++;
        }
        while (hi > lo && active[hi - 1] == 0) {
          hi--;
        }
        node = child;
        depth++;
      }
      p.descended(table, table.changes(), depth);
      for (int i = 0; i < w; i++) {
        for (long rest = active[i]; rest != 0; rest &= rest - 1) {
          matchedPages[(i << 6) + Long.numberOfTrailingZeros(rest)] = depth;
        }
      }
      for (int i = 0; i < matchedPages.length; i++) {
        matchedPages[i] *= pageSize; // now tokens; unregistered ordinals stay 0 and are not listed
      }
      return new PrefixMatch(p.length(), new OrdinalMatch(ordinals, matchedPages));
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
    // Hash the pages an insert can reach before taking the lock (a match usually did already).
    if (p.pages() > 0) {
      p.hash(p.pages() - 1);
    }
    long stamp = lock.writeLock();
    try {
      RecencyView view = views.get(backend);
      if (view == null) {
        throw new IllegalArgumentException(
            "backend: " + backend + " is not registered (expected: addBackend first)");
      }
      int pages = Math.min(p.pages(), view.capacityPages);
      if (pages == 0) {
        return Pin.NONE;
      }
      settle(view);
      long now = now();
      walkOldTimes = mode == PIN ? new long[pages] : null;
      walkEntries = mode == PIN ? new int[pages] : null;
      int walked = walkPath(view, p, pages, now, mode);
      long[] oldTimes = walkOldTimes;
      int[] entries = walkEntries;
      walkOldTimes = null;
      walkEntries = null;
      Pin pin = Pin.NONE;
      if (mode == PIN && walked > 0) {
        PagePin pagePin = new PagePin(this, view, p, walked, walkCreated, now, oldTimes, entries);
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
   * tells whether any walk has passed it since (see {@link PrefixIndex.Pin#abandon}).
   */
  private long now() {
    long now = Math.max(ticker.nanos(), lastNanos + 1);
    lastNanos = now;
    return now;
  }

  /** {@link PagePin#confirm}: settles the pin's provisional pages if nothing else changed the view. */
  void confirm(PagePin pin) {
    long stamp = lock.writeLock();
    try {
      RecencyView view = pin.view;
      if (!pin.ended && views.get(view.id) == view && view.provisionalPin == pin) {
        settle(view);
        trim(view);
      }
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /** {@link PagePin#release} and {@link PagePin#abandon}: the first call unpins, the rest do nothing. */
  void end(PagePin pin, boolean abandoned) {
    end(pin, abandoned, -1);
  }

  /**
   * As {@link #end(PagePin, boolean)}; then, for a release with the engine's report of the prompt's
   * cached tokens that contradicts the view ({@link UsageCorrection}), evicts what the engine cannot
   * have had (see {@link #evictUsedBefore}).
   */
  void end(PagePin pin, boolean abandoned, int engineCachedTokens) {
    long stamp = lock.writeLock();
    try {
      if (pin.ended) {
        return;
      }
      pin.ended = true;
      RecencyView view = pin.view;
      if (views.get(view.id) != view) {
        return;
      }
      settle(view);
      int[] entries = pinnedEntries(pin);
      int kept = entries == null ? 0 : pin.pages;
      if (abandoned && pin.created > 0 && entries != null) {
        kept -= removeUntouched(view, entries, pin.pages, pin.created, pin.walkTime);
      }
      unpinPath(view, entries, kept, now());
      trim(view);
      if (!abandoned && engineCachedTokens >= 0) {
        int believedTokens = (pin.pages - pin.created) * pageSize;
        int keep = UsageCorrection.keepPages(pin.prompt.length(), believedTokens, engineCachedTokens, pageSize);
        if (keep >= 0) {
          evictUsedBefore(view, pin.oldTimes[keep]);
        }
      }
    } finally {
      lock.unlockWrite(stamp);
    }
  }

  /**
   * The view's entry of each page {@code pin} holds: those its insert recorded, unless the view has
   * renumbered its entries since ({@link RecencyView#shrinkToCapacity}), in which case they are found
   * again by the prompt's page hashes; {@code null} if the path is not as pinned (which a live pin
   * prevents). A live pin keeps its entries: nothing drops a pinned entry but its own abandon
   * ({@link #removeUntouched}) and the end of the view ({@link #forget}, {@link #removeBackend}).
   */
  private int[] pinnedEntries(PagePin pin) {
    RecencyView view = pin.view;
    if (pin.renumberings == view.renumberings) {
      return pin.entries;
    }
    int[] entries = new int[pin.pages];
    int node = ROOT;
    for (int d = 0; d < pin.pages; d++) {
      int child = nodes.child(node, pin.prompt.hash(d));
      if (child <= 0) {
        return null;
      }
      entries[d] = view.entryOf(child);
      if (entries[d] == NIL) {
        return null;
      }
      node = child;
    }
    return entries;
  }

  /**
   * Removes from {@code view}, deepest first, the last {@code created} of the first {@code pages}
   * pinned {@code entries} for as long as each is still exactly as the pinning insert left it: used
   * at {@code walkTime} (no walk has passed it since, so no other request has used it or added a page
   * under it) and pinned once (by that insert). Each removed page is then a leaf. Returns how many
   * were removed.
   */
  private int removeUntouched(RecencyView view, int[] entries, int pages, int created, long walkTime) {
    int removed = 0;
    for (int d = pages - 1; d >= pages - created; d--) {
      int e = entries[d];
      if (view.pins(e) != 1 || view.time(e) != walkTime) {
        break;
      }
      drop(view, e);
      removed++;
    }
    return removed;
  }

  /**
   * Lowers the pin count of the first {@code pages} pinned {@code entries} and marks them used at
   * {@code now}, linked tail page first at the most recent end as {@link #walkPath} links an insert's
   * pages; an unlisted page (unlinked by an eviction while pinned) is linked back when its count
   * reaches zero. Reads the pin's recorded entries rather than descending the tree: no page-hash
   * lookups, and no load waits for the one before it.
   */
  private static void unpinPath(RecencyView view, int[] entries, int pages, long now) {
    int after = NIL;
    for (int d = 0; d < pages; d++) {
      int e = entries[d];
      if (!view.listed(e)) {
        if (view.unpin(e)) {
          view.link(e, after, now);
          after = e;
        } else {
          view.touch(e, now); // its time only tells that a walk passed (PagePin#abandon)
        }
      } else {
        view.unpin(e);
        view.moveBefore(e, after, now);
        after = e;
      }
    }
  }

  /**
   * The correction of an engine's report: the engine lacked the prompt's page whose last use the view
   * had recorded at {@code cutoff}. vLLM evicts its free blocks least recently freed first, the order
   * each view keeps, so it had lost every page of this backend's view used no later than that page
   * too: they are evicted from the view, least recent first, except pinned ones (requests in flight
   * hold them, as the engine holds theirs). The prompt's own pages were used since (its routing and
   * its release), so they stay: the engine has computed them again. A page's descendants were used no
   * later than it and are unpinned when it is, so the view stays prefix-closed. O(pages evicted).
   */
  private void evictUsedBefore(RecencyView view, long cutoff) {
    while (true) {
      int e = view.leastRecentUnpinned(NIL);
      if (e == NIL || view.time(e) > cutoff) {
        return;
      }
      drop(view, e);
      corrections++;
    }
  }

  /** Pages evicted by engine reports ({@link #evictUsedBefore}) since creation; for tests. */
  long correctedPages() {
    long stamp = lock.readLock();
    try {
      return corrections;
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /** Drops entry {@code e} (a leaf of its view) from {@code view}, pinned or not. */
  private void drop(RecencyView view, int e) {
    int node = view.remove(e);
    nodes.unhold(node, view.ordinal);
    nodes.freeIfUnheld(node);
  }

  @Override
  public long sizeTokens(BackendId backend) {
    Objects.requireNonNull(backend, "backend");
    long stamp = lock.readLock();
    try {
      RecencyView view = views.get(backend);
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
          + nodes.estimatedBytes()
          + (16 + 4L * byOrdinal.length) + (16 + 8L * registered.length)
          + 48 + 32L * views.size(); // the HashMap and its nodes
      for (RecencyView view : views.values()) {
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
      return nodes.live();
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /** How many times {@code backend}'s entry arrays grew, or 0 if unregistered; for tests. */
  int entryGrowths(BackendId backend) {
    long stamp = lock.readLock();
    try {
      RecencyView view = views.get(backend);
      return view == null ? 0 : view.growths();
    } finally {
      lock.unlockRead(stamp);
    }
  }

  /**
   * Walks the prompt's first {@code pages} pages from the root (at most the view's capacity), marking
   * each held by {@code view} and used at {@code now} and creating missing nodes ({@link #INSERT});
   * {@link #PIN} also raises each page's pin count and records each page's entry ({@link
   * #walkEntries}) for the pin's end ({@link #unpinPath}). Unlisted (pinned) pages are left out of
   * the list: they are not evictable, and their last release relinks them.
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
   * node under another parent, if the view holds {@link RecencyView#limitPages} pages and could not
   * make room for a new one.
   */
  private int walkPath(RecencyView view, HashedPrompt prompt, int pages, long now, int mode) {
    int ordinal = view.ordinal;
    int node = ROOT;
    int after = NIL; // entry of the previous listed page, which this page is linked just before
    int guess = NIL; // where the last insert of this path left this page's entry
    walkCreated = 0;
    // the pages the match before this insert found need no lookup: a node ahead on the path is held
    // by another view, which this walk's evictions do not touch, so it stays until the walk is done
    int known = prompt.knownDepth(nodes);
    boolean hinted = false; // whether this page's node is known to be its parent's hinted child
    for (int d = 0; d < pages; d++) {
      long hash = prompt.hash(d);
      int child;
      if (d < known) {
        child = prompt.knownNode(d);
        if (child < 0) { // the match found it through the hash map: hinted below
          child = -child;
        } else {
          // found through the parent's hint: left as it is (a hint is only advice; if another
          // thread's walk moved it since, the next descent pays one map lookup there)
          hinted = true;
        }
      } else {
        child = nodes.child(node, hash);
        if (child == NodeTable.COLLISION) {
          return d; // 64-bit collision with a page elsewhere in the tree: index no deeper
        }
      }
      int e;
      if (child == 0) {
        e = NIL;
      } else if (guess != NIL && view.node(guess) == child) {
        e = guess;
      } else {
        e = view.entryOf(child);
      }
      guess = NIL;
      if (e == NIL) {
        // a pinning insert's new pages are provisional: they take no room yet
        if (mode != PIN && view.size - view.provisional >= view.capacityPages) {
          evictLeastRecent(view, after);
        }
        if (view.size >= view.limitPages()
            && (view.size - walkCreated <= view.capacityPages || !evictLeastRecent(view, after))) {
          // At twice its capacity with nothing to evict that the trim after this walk would not
          // evict anyway: pins hold the view full, so the prompt is indexed no deeper here.
          return d;
        }
        if (child == 0) {
          child = nodes.allocate(hash, node);
        }
        e = view.newEntry(child);
        nodes.hold(child, ordinal);
        view.link(e, after, now);
        after = e;
        walkCreated++;
        if (mode == PIN) {
          view.pin(e);
        }
      } else if (!view.listed(e)) {
        if (walkOldTimes != null) {
          walkOldTimes[d] = view.time(e);
        }
        // Pinned and unlinked by an eviction: stays out of the list until its last release.
        if (mode == PIN) {
          view.pin(e);
        }
        view.touch(e, now); // its time only tells that a walk passed (PagePin#abandon)
      } else {
        if (walkOldTimes != null) {
          walkOldTimes[d] = view.time(e);
        }
        if (mode == PIN) {
          view.pin(e);
        }
        // Tail-first linking left the child's entry just before this one, unless another insert
        // moved either since.
        guess = view.prev(e);
        view.moveBefore(e, after, now);
        after = e;
      }
      if (walkEntries != null) {
        walkEntries[d] = e;
      }
      if (!hinted) {
        nodes.hint(node, child);
      }
      hinted = false;
      node = child;
    }
    return pages;
  }

  /** Ends the provisional state of the last pinning insert's pages: from now on they count. */
  private static void settle(RecencyView view) {
    view.provisional = 0;
    view.provisionalPin = null;
  }

  /** Evicts {@code view}'s least recent unpinned pages while it is over capacity and any are left. */
  private void trim(RecencyView view) {
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
  private boolean evictLeastRecent(RecencyView view, int stop) {
    int e = view.leastRecentUnpinned(stop);
    if (e == NIL) {
      return false;
    }
    drop(view, e);
    return true;
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
    nodes.addHolderWord();
    int words = nodes.words();
    registered = Arrays.copyOf(registered, words);
    byOrdinal = Arrays.copyOf(byOrdinal, words * 64);
    registered[words - 1] = 1L;
    return (words - 1) << 6;
  }

  @Override
  public void checkInvariants() {
    long stamp = lock.readLock();
    try {
      long bits = nodes.checkInvariants(registered, (node, ordinal) -> {
        RecencyView view = byOrdinal[ordinal];
        NodeTable.check(view != null && view.entryOf(node) != NIL,
            "node %d has ordinal %d's bit but no entry", node, ordinal);
      });
      long holdings = 0;
      for (RecencyView view : views.values()) {
        int ordinal = view.ordinal;
        NodeTable.check(byOrdinal[ordinal] == view, "ordinal %d does not map back to %s",
            ordinal, view.id);
        NodeTable.check((registered[ordinal >>> 6] & (1L << ordinal)) != 0,
            "ordinal %d not registered", ordinal);
        view.checkInvariants(nodes);
        holdings += view.size;
      }
      NodeTable.check(bits == holdings, "holder bits %d != sum of backend sizes %d", bits, holdings);
    } finally {
      lock.unlockRead(stamp);
    }
  }

  @Override
  public String toString() {
    long stamp = lock.readLock();
    try {
      return "PrefixIndex[pageSizeTokens=" + pageSize + ", backends=" + views.size()
          + ", nodes=" + nodes.live() + "]";
    } finally {
      lock.unlockRead(stamp);
    }
  }
}
