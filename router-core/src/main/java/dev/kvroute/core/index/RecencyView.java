package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * One backend's approximate view in {@link RadixPrefixIndex}: its capacity, and one entry per page
 * it holds, in a doubly linked list from least to most recently used, with a node-to-entry map and
 * a pin count per entry.
 *
 * <p>Entries are 16-byte rows of {@code links} (previous and next entry packed in one long, then the
 * last-use time) plus the entry's node in {@code entryNode} and its pin count in {@code pins};
 * entries are recycled through a free list chained through the next field. Pinned entries that an
 * eviction found at the least recent end are unlinked (their previous link is {@code UNLISTED}) until
 * their last pin ends. The order of the list (each page behind all its listed descendants) is kept
 * by the index's walk; this class keeps the links, counts and storage.
 *
 * <p>Bounds: a view holds at most {@link #limitPages()} pages, twice its capacity (its capacity, plus
 * room for a pinning insert's provisional pages or for pages pinned beyond the capacity), and its
 * arrays grow by doubling (to the capacity, then to the limit), so adding {@code n} pages costs O(n)
 * amortized whatever the view's size. A view registered with a smaller capacity is reallocated
 * by {@link #shrinkToCapacity}.
 *
 * <p>Memory: per held page 16 (links and time) + 4 (node) + 4 (pins) + 8 to 16 (entry map) bytes.
 *
 * <p>Not thread-safe; {@link RadixPrefixIndex} guards it with its lock.
 */
final class RecencyView {
  static final int NIL = NodeTable.NIL;
  private static final long LOW = 0xFFFFFFFFL;
  private static final int UNLISTED = -2;
  private static final int INITIAL_ENTRIES = 16;

  final BackendId id;
  final int ordinal;
  int capacityPages;
  int size;
  int pinned; // entries with pins > 0
  int provisional; // pages the last pinning insert added, until the view's next change
  PrefixIndex.Pin provisionalPin; // that insert's pin
  int head = NIL;
  int tail = NIL;
  private long[] links = new long[2 * INITIAL_ENTRIES]; // e: [2e] = prev << 32 | next, [2e + 1] = time
  private int[] entryNode = new int[INITIAL_ENTRIES];
  private int[] pins = new int[INITIAL_ENTRIES];
  private int entryHighWater;
  private int freeEntries = NIL; // chained through the next field
  private IntIntMap entryOf = new IntIntMap();
  private int growths; // reallocations of the entry arrays, for the growth regression test
  /** Times {@link #shrinkToCapacity} renumbered the entries: an entry id kept across it is stale. */
  int renumberings;

  RecencyView(BackendId id, int ordinal) {
    this.id = id;
    this.ordinal = ordinal;
  }

  /**
   * The most pages this view may hold: twice its capacity. A walk that would add a page to a view
   * this full stops there.
   */
  int limitPages() {
    return (int) Math.min(2L * capacityPages, Integer.MAX_VALUE - 8);
  }

  /** The entry of {@code node}, or {@link #NIL}. */
  int entryOf(int node) {
    return entryOf.get(node, NIL);
  }

  int node(int e) {
    return entryNode[e];
  }

  int pins(int e) {
    return pins[e];
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

  /** A new, unlinked entry for {@code node}, which the view does not hold yet. */
  int newEntry(int node) {
    int e;
    if (freeEntries != NIL) {
      e = freeEntries;
      freeEntries = next(e);
    } else {
      if (entryHighWater == entryNode.length) {
        // Doubling, to exactly the capacity first (a view that stays within it wastes nothing),
        // then up to the limit: growing by one slot past the capacity made an insert into a view
        // over its capacity quadratic in the prompt.
        int length = entryNode.length;
        long bound = length < capacityPages ? capacityPages : limitPages();
        int capacity = (int) Math.min(Integer.MAX_VALUE - 8,
            Math.max(length + INITIAL_ENTRIES, Math.min(2L * length, bound)));
        growths++;
        entryNode = Arrays.copyOf(entryNode, capacity);
        pins = Arrays.copyOf(pins, capacity);
        links = Arrays.copyOf(links, 2 * capacity);
      }
      e = entryHighWater++;
    }
    entryNode[e] = node;
    entryOf.putAbsent(node, e);
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

  /**
   * The least recent unpinned entry, unlinking (once per pin) the pinned entries in front of it; or
   * {@link #NIL} if the list runs out or reaches {@code stop} first.
   */
  int leastRecentUnpinned(int stop) {
    int e = head;
    while (e != NIL && e != stop && pins[e] > 0) {
      unlink(e);
      setPrev(e, UNLISTED);
      e = head;
    }
    return e == stop ? NIL : e;
  }

  /** Drops entry {@code e}, listed or not, pinned or not; returns its node. */
  int remove(int e) {
    int node = entryNode[e];
    if (listed(e)) {
      unlink(e);
    }
    if (pins[e] > 0) {
      pins[e] = 0;
      pinned--;
    }
    entryNode[e] = NodeTable.ROOT;
    links[2 * e] = (NIL & ~LOW) | (freeEntries & LOW);
    freeEntries = e;
    size--;
    entryOf.remove(node);
    return node;
  }

  /** Calls {@code action} with the node of every entry (for dropping the view's holdings). */
  void forEachNode(java.util.function.IntConsumer action) {
    for (int e = 0; e < entryHighWater; e++) {
      if (entryNode[e] != NodeTable.ROOT) {
        action.accept(entryNode[e]);
      }
    }
  }

  /** Calls {@code action} with every entry (for a correction's walk of the view). */
  void forEachEntry(java.util.function.IntConsumer action) {
    for (int e = 0; e < entryHighWater; e++) {
      if (entryNode[e] != NodeTable.ROOT) {
        action.accept(e);
      }
    }
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

  /** Links {@code e} just before {@code next} (or last if {@code next} is {@link #NIL}), used at {@code now}. */
  void link(int e, int next, long now) {
    if (next == NIL) {
      links[2 * e] = ((long) tail << 32) | (NIL & LOW);
      links[2 * e + 1] = now;
      if (tail == NIL) {
        head = e;
      } else {
        setNext(tail, e);
      }
      tail = e;
      return;
    }
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

  /**
   * Moves listed entry {@code e} just before {@code next} (or last if {@code next} is {@link #NIL}),
   * used at {@code now}; an entry already there is only touched.
   */
  void moveBefore(int e, int next, long now) {
    if (next == NIL ? e == tail : next(e) == next) {
      touch(e, now);
    } else {
      unlink(e);
      link(e, next, now);
    }
  }

  /**
   * After a capacity cut, reallocates the entries (renumbered in list order) if their arrays are
   * more than twice the new capacity, so memory follows the configured capacity.
   */
  void shrinkToCapacity() {
    int target = Math.max(INITIAL_ENTRIES, Math.max(capacityPages, size));
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
      if (entryNode[e] != NodeTable.ROOT && !listed(e)) {
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
    renumberings++;
  }

  long estimatedBytes() {
    return 64 + (16 + 8L * links.length) + (16 + 4L * entryNode.length)
        + (16 + 4L * pins.length) + entryOf.estimatedBytes();
  }

  /** How many times the entry arrays were reallocated to grow (for the growth regression test). */
  int growths() {
    return growths;
  }

  /**
   * Checks the list (links, time order, tail-first order), the entry map, the pin counts (a pin
   * covers a whole chain) and the bounds against {@code nodes}. Throws {@link IllegalStateException}
   * describing the first violation.
   */
  void checkInvariants(NodeTable nodes) {
    NodeTable.check(provisional >= 0 && provisional <= size, "%s has %d provisional pages of %d",
        id, provisional, size);
    NodeTable.check(size - provisional <= capacityPages || head == NIL,
        "%s holds %d pages (%d provisional) over capacity %d with unpinned pages left to evict",
        id, size, provisional, capacityPages);
    NodeTable.check(size <= Math.max(limitPages(), pinned),
        "%s holds %d pages, over its limit %d (%d pinned)", id, size, limitPages(), pinned);
    NodeTable.check(entryOf.size() == size, "%s entry map has %d entries for size %d",
        id, entryOf.size(), size);
    Map<Integer, Integer> position = new HashMap<>();
    int count = 0;
    int prev = NIL;
    long prevTime = Long.MIN_VALUE;
    for (int e = head; e != NIL; e = next(e)) {
      NodeTable.check(count < size, "%s LRU list is longer than its size %d (cycle?)", id, size);
      NodeTable.check(prev(e) == prev, "%s entry %d has prev %d, expected %d", id, e, prev(e), prev);
      int node = entryNode[e];
      NodeTable.check(node > NodeTable.ROOT && nodes.isLive(node),
          "%s entry %d points at dead node %d", id, e, node);
      NodeTable.check(nodes.held(node, ordinal), "%s holds node %d but its bit is clear", id, node);
      NodeTable.check(entryOf.get(node, NIL) == e, "%s entry map does not map node %d to entry %d",
          id, node, e);
      NodeTable.check(time(e) >= prevTime, "%s LRU list is out of time order at entry %d", id, e);
      position.put(node, count);
      prevTime = time(e);
      prev = e;
      count++;
    }
    NodeTable.check(tail == prev, "%s tail %d != last entry %d", id, tail, prev);
    int listedCount = count;
    Map<Integer, Integer> unlisted = new HashMap<>();
    Map<Integer, Integer> pinCount = new HashMap<>();
    for (int e = 0; e < entryHighWater; e++) {
      int node = entryNode[e];
      if (node == NodeTable.ROOT) {
        continue;
      }
      if (pins[e] > 0) {
        pinCount.put(node, pins[e]);
      }
      if (listed(e)) {
        NodeTable.check(position.containsKey(node), "%s entry %d of node %d is neither listed nor free",
            id, e, node);
        continue;
      }
      NodeTable.check(pins[e] > 0, "%s entry %d is out of the LRU list but not pinned", id, e);
      NodeTable.check(nodes.isLive(node) && nodes.held(node, ordinal),
          "%s unlisted entry %d points at node %d it does not hold", id, e, node);
      NodeTable.check(entryOf.get(node, NIL) == e,
          "%s entry map does not map unlisted node %d to entry %d", id, node, e);
      NodeTable.check(!position.containsKey(node), "%s node %d is both listed and unlisted", id, node);
      unlisted.put(node, e);
      count++;
    }
    NodeTable.check(pinCount.size() == pinned, "%s has %d pinned entries, counter %d",
        id, pinCount.size(), pinned);
    NodeTable.check(count == size, "%s has %d listed + %d unlisted entries, size %d",
        id, listedCount, unlisted.size(), size);
    for (Map.Entry<Integer, Integer> held : pinCount.entrySet()) {
      int parent = nodes.parent(held.getKey());
      if (parent != NodeTable.ROOT) {
        Integer parentPins = pinCount.get(parent);
        NodeTable.check(parentPins != null && parentPins >= held.getValue(),
            "%s node %d has %d pins but its parent %d has %s (a pin covers a whole chain)",
            id, held.getKey(), held.getValue(), parent, parentPins);
      }
    }
    for (Map.Entry<Integer, Integer> held : position.entrySet()) {
      int parent = nodes.parent(held.getKey());
      if (parent != NodeTable.ROOT && !unlisted.containsKey(parent)) {
        Integer parentPosition = position.get(parent);
        NodeTable.check(parentPosition != null, "%s holds node %d but not its parent %d",
            id, held.getKey(), parent);
        NodeTable.check(parentPosition > held.getValue(),
            "%s would evict node %d before its child %d (not tail-first)", id, parent, held.getKey());
      }
    }
  }
}
