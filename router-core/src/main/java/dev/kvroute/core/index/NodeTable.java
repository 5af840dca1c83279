package dev.kvroute.core.index;

import java.util.Arrays;

/**
 * The node storage of {@link RadixPrefixIndex}: one row of a {@code long[]} per page node, found
 * through one global map from chained page hash to node id, which doubles as every node's child map
 * (a child's hash is chained from its parent's).
 *
 * <p>A row is {@code stride} longs: the node's page hash, its links (parent node id in the high half,
 * child hint in the low half) and {@code words} holder bitmask words (one bit per dense backend
 * ordinal). The hint is the child most recently inserted under the node: along a conversation it
 * nearly always hits, and the rows of a path allocated together are adjacent, so a descent mostly
 * reads consecutive rows instead of probing the map. A hint is only used after checking the hinted
 * row's hash and parent, so a stale hint costs one map lookup. Row 0 is the root sentinel (the empty
 * prefix); freed rows are recycled through a free list chained through their hash field.
 *
 * <p>A node lives while some backend holds it: {@link #freeIfUnheld} frees it when its last holder
 * bit is cleared, which the prefix-closed views make safe (a node nobody holds has no held child).
 *
 * <p>Memory: per live node one row ({@code 8 x stride} bytes) plus 16 to 32 bytes in the hash map.
 * The row array doubles when full; it is never shrunk.
 *
 * <p>Not thread-safe; {@link RadixPrefixIndex} guards it with its lock.
 */
final class NodeTable {
  static final int ROOT = 0;
  static final int NIL = -1;
  /** What {@link #child} returns when the hash belongs to a node under another parent. */
  static final int COLLISION = -1;
  private static final int FREE = Integer.MIN_VALUE;
  private static final int INITIAL_NODES = 1024;
  // Row layout: HASH, LINKS, then `words` holder bitmask words.
  private static final int HASH = 0; // chained page hash; for a free node, the next free node id
  private static final int LINKS = 1; // parent node id (FREE for a free node) << 32 | child hint
  private static final int HOLDERS = 2;

  private long[] rows;
  private int stride = HOLDERS + 1;
  private int words = 1;
  private int capacity = INITIAL_NODES;
  private int highWater = 1; // rows below this have been used
  private int freeNodes = NIL; // head of the free-node list
  private int live; // excluding the root
  private long changes; // nodes allocated and freed: while unchanged, every node id keeps its place
  private final LongIntMap byHash = new LongIntMap();

  NodeTable() {
    rows = new long[INITIAL_NODES * stride];
    rows[HASH] = PageHash.ROOT;
    rows[LINKS] = links(NIL, 0);
  }

  /** Holder words per row: one per 64 backend ordinals. */
  int words() {
    return words;
  }

  /**
   * How many nodes have been allocated and freed so far. While it is unchanged, every node found by
   * a descent is still there with the same hash and parent, so a later descent of the same path may
   * reuse the node ids instead of looking them up again ({@link HashedPrompt#descended}).
   */
  long changes() {
    return changes;
  }

  /** Live nodes, excluding the root. */
  int live() {
    return live;
  }

  /**
   * The child of {@code node} whose chained page hash is {@code hash}: its id; 0 if there is none;
   * {@link #COLLISION} if the hash belongs to a node under another parent (a 64-bit collision: index
   * no deeper).
   */
  int child(int node, long hash) {
    long[] r = rows;
    int s = stride;
    int hint = (int) r[node * s + LINKS];
    if (hint > 0) {
      int row = hint * s;
      if (r[row + HASH] == hash && parentOf(r[row + LINKS]) == node) {
        return hint;
      }
    }
    int child = byHash.get(hash);
    if (child == 0) {
      return 0;
    }
    return parentOf(r[child * s + LINKS]) == node ? child : COLLISION;
  }

  /** Whether {@code child} is {@code parent}'s hinted child (see {@link #hint}). */
  boolean hinted(int parent, int child) {
    return (int) rows[parent * stride + LINKS] == child;
  }

  /** Makes {@code child} the hinted child of {@code parent} (the child most recently inserted). */
  void hint(int parent, int child) {
    int at = parent * stride + LINKS;
    if ((int) rows[at] != child) {
      rows[at] = links(parentOf(rows[at]), child);
    }
  }

  /** Word {@code word} of {@code node}'s holder bitmask. */
  long holders(int node, int word) {
    return rows[node * stride + HOLDERS + word];
  }

  /** Whether the backend with dense ordinal {@code ordinal} holds {@code node}. */
  boolean held(int node, int ordinal) {
    return (rows[node * stride + HOLDERS + (ordinal >>> 6)] & (1L << ordinal)) != 0;
  }

  void hold(int node, int ordinal) {
    rows[node * stride + HOLDERS + (ordinal >>> 6)] |= 1L << ordinal;
  }

  /** Clears {@code ordinal}'s holder bit; the caller frees the node ({@link #freeIfUnheld}). */
  void unhold(int node, int ordinal) {
    rows[node * stride + HOLDERS + (ordinal >>> 6)] &= ~(1L << ordinal);
  }

  int parent(int node) {
    return parentOf(rows[node * stride + LINKS]);
  }

  /** Whether {@code node} is a row in use (the root or a held page). */
  boolean isLive(int node) {
    return node >= ROOT && node < highWater && parentOf(rows[node * stride + LINKS]) != FREE;
  }

  /** A new node for page hash {@code hash} under {@code parent}, held by nobody yet. */
  int allocate(long hash, int parent) {
    int node;
    if (freeNodes != NIL) {
      node = freeNodes;
      freeNodes = (int) rows[node * stride + HASH];
    } else {
      if (highWater == capacity) {
        capacity *= 2;
        rows = Arrays.copyOf(rows, capacity * stride);
      }
      node = highWater++;
    }
    int row = node * stride;
    rows[row + HASH] = hash;
    rows[row + LINKS] = links(parent, 0);
    Arrays.fill(rows, row + HOLDERS, row + stride, 0L);
    byHash.putAbsent(hash, node);
    live++;
    changes++;
    return node;
  }

  /** Frees {@code node} if no backend holds it any more. */
  void freeIfUnheld(int node) {
    int row = node * stride;
    for (int i = 0; i < words; i++) {
      if (rows[row + HOLDERS + i] != 0) {
        return;
      }
    }
    // Held by nobody, so no child is held either (views are prefix-closed): it is a leaf.
    byHash.remove(rows[row + HASH]);
    rows[row + LINKS] = links(FREE, 0);
    rows[row + HASH] = freeNodes;
    freeNodes = node;
    live--;
    changes++;
  }

  /** Widens every row by one holder word (64 more backend ordinals). */
  void addHolderWord() {
    int oldStride = stride;
    int newStride = oldStride + 1;
    long[] widened = new long[capacity * newStride];
    for (int node = 0; node < highWater; node++) {
      System.arraycopy(rows, node * oldStride, widened, node * newStride, oldStride);
    }
    rows = widened;
    stride = newStride;
    words++;
  }

  long estimatedBytes() {
    return 48 + (16 + 8L * rows.length) + byHash.estimatedBytes();
  }

  /**
   * Checks the rows, the free list and the hash map against each other, and that every live node is
   * held, only by {@code registered} ordinals, and by no ordinal that does not hold its parent. Calls
   * {@code eachHolder} with every (node, ordinal) holding. Returns the number of holder bits set.
   */
  long checkInvariants(long[] registered, HolderVisitor eachHolder) {
    check(parentOf(rows[LINKS]) == NIL && rows[HASH] == PageHash.ROOT, "root sentinel overwritten");
    check(stride == HOLDERS + words && rows.length == capacity * stride && registered.length == words,
        "node rows: stride %d, words %d, length %d", stride, words, rows.length);
    int free = 0;
    for (int node = freeNodes; node != NIL; node = (int) rows[node * stride + HASH]) {
      check(node > ROOT && node < highWater, "free list holds bad node %d", node);
      check(parentOf(rows[node * stride + LINKS]) == FREE, "free list holds live node %d", node);
      check(++free <= highWater, "free list has a cycle");
    }
    int count = 0;
    long bits = 0;
    for (int node = 1; node < highWater; node++) {
      int row = node * stride;
      int parent = parentOf(rows[row + LINKS]);
      if (parent == FREE) {
        continue;
      }
      count++;
      check(parent >= 0 && parent < highWater && parent != node,
          "node %d has bad parent %d", node, parent);
      int hint = (int) rows[row + LINKS];
      check(hint >= 0 && hint < highWater, "node %d has bad child hint %d", node, hint);
      check(parent == ROOT || parentOf(rows[parent * stride + LINKS]) != FREE,
          "node %d is an orphan (parent %d is free)", node, parent);
      check(byHash.get(rows[row + HASH]) == node,
          "node %d is not found by its hash (parent/child link broken)", node);
      boolean isHeld = false;
      for (int i = 0; i < words; i++) {
        long mask = rows[row + HOLDERS + i];
        isHeld |= mask != 0;
        bits += Long.bitCount(mask);
        check((mask & ~registered[i]) == 0,
            "node %d is held by unregistered ordinals %x", node, mask & ~registered[i]);
        if (parent != ROOT) {
          long parentMask = rows[parent * stride + HOLDERS + i];
          check((mask & ~parentMask) == 0,
              "node %d is held by ordinals %x that do not hold its parent %d (not prefix-closed)",
              node, mask & ~parentMask, parent);
        }
        for (long m = mask; m != 0; m &= m - 1) {
          eachHolder.visit(node, (i << 6) + Long.numberOfTrailingZeros(m));
        }
      }
      check(isHeld, "node %d is held by no backend but was not removed", node);
    }
    check(count == live, "live node count %d != counter %d", count, live);
    check(count + free + 1 == highWater,
        "live %d + free %d + root != allocated %d", count, free, highWater);
    check(byHash.size() == count, "hash map has %d entries for %d nodes", byHash.size(), count);
    return bits;
  }

  /** Receives each (node, ordinal) holding during {@link #checkInvariants}. */
  @FunctionalInterface
  interface HolderVisitor {
    void visit(int node, int ordinal);
  }

  static void check(boolean condition, String format, Object... args) {
    if (!condition) {
      throw new IllegalStateException(
          "PrefixIndex invariant violated: " + String.format(format, args));
    }
  }

  private static long links(int parent, int hint) {
    return ((long) parent << 32) | (hint & 0xFFFFFFFFL);
  }

  private static int parentOf(long links) {
    return (int) (links >> 32);
  }
}
