package dev.kvroute.core.index;

/**
 * An open-addressing hash map from {@code long} keys to {@code long} values, in the layout of {@link
 * LongIntMap} (linear probing over one array of 16-byte key/value slots, slot = folded key,
 * backward-shift deletion, no tombstones). Any key and any value may be stored: an empty slot is
 * marked by key 0, and the key 0 itself is kept in a field beside the table. Keys are expected to be
 * well mixed already (engine block hashes, chained page hashes).
 *
 * <p>Memory: 16 bytes per slot; the table doubles when more than 2/3 full and halves when less than
 * 1/8 full, so it holds between 24 and 128 bytes per entry (24-48 while growing).
 *
 * <p>Not thread-safe; {@link PreciseView} is guarded by its backend's lock.
 */
final class LongLongMap {
  private static final int MIN_CAPACITY = 16;

  /** Receives one entry of {@link #forEach}. */
  @FunctionalInterface
  interface Visitor {
    void accept(long key, long value);
  }

  private long[] table; // slot i: table[2i] = key (0 = empty slot), table[2i + 1] = value
  private int mask;
  private int size; // entries in the table, key 0 not included
  private boolean hasZeroKey;
  private long zeroKeyValue;

  LongLongMap() {
    table = new long[2 * MIN_CAPACITY];
    mask = MIN_CAPACITY - 1;
  }

  int size() {
    return size + (hasZeroKey ? 1 : 0);
  }

  boolean containsKey(long key) {
    if (key == 0) {
      return hasZeroKey;
    }
    return find(key) >= 0;
  }

  /** The value stored for {@code key}, or {@code absent} if there is none. */
  long get(long key, long absent) {
    if (key == 0) {
      return hasZeroKey ? zeroKeyValue : absent;
    }
    int slot = find(key);
    return slot < 0 ? absent : table[2 * slot + 1];
  }

  /** Stores {@code value} for {@code key}, replacing any value it had. */
  void put(long key, long value) {
    if (key == 0) {
      hasZeroKey = true;
      zeroKeyValue = value;
      return;
    }
    int slot = find(key);
    if (slot >= 0) {
      table[2 * slot + 1] = value;
      return;
    }
    if (size + 1 > (mask + 1) / 3 * 2) {
      rehash((mask + 1) * 2);
    }
    insert(table, mask, key, value);
    size++;
  }

  /** Removes {@code key}; returns whether it was present. */
  boolean remove(long key) {
    if (key == 0) {
      boolean had = hasZeroKey;
      hasZeroKey = false;
      zeroKeyValue = 0;
      return had;
    }
    int slot = find(key);
    if (slot < 0) {
      return false;
    }
    long[] t = table;
    int m = mask;
    // Backward-shift deletion, as in LongIntMap.
    int hole = slot;
    for (int cur = (hole + 1) & m; t[2 * cur] != 0; cur = (cur + 1) & m) {
      int home = slot(t[2 * cur], m);
      if (((cur - home) & m) >= ((cur - hole) & m)) {
        t[2 * hole] = t[2 * cur];
        t[2 * hole + 1] = t[2 * cur + 1];
        hole = cur;
      }
    }
    t[2 * hole] = 0;
    t[2 * hole + 1] = 0;
    size--;
    if (size < (m + 1) / 8 && m + 1 > MIN_CAPACITY) {
      rehash((m + 1) / 2);
    }
    return true;
  }

  /** Removes every entry and returns to the minimum capacity. */
  void clear() {
    table = new long[2 * MIN_CAPACITY];
    mask = MIN_CAPACITY - 1;
    size = 0;
    hasZeroKey = false;
    zeroKeyValue = 0;
  }

  /**
   * Calls {@code visitor} for every entry, in no particular order. The visitor may replace the value
   * of an entry with {@link #put} (no structural change) but must not add or remove keys.
   */
  void forEach(Visitor visitor) {
    if (hasZeroKey) {
      visitor.accept(0, zeroKeyValue);
    }
    long[] t = table;
    for (int i = 0; i < t.length; i += 2) {
      if (t[i] != 0) {
        visitor.accept(t[i], t[i + 1]);
      }
    }
  }

  /** Heap bytes of the table and this object (array and object headers included). */
  long estimatedBytes() {
    return 40 + 16 + 8L * table.length;
  }

  /** Number of slots (for tests). */
  int capacity() {
    return mask + 1;
  }

  private int find(long key) {
    long[] t = table;
    int m = mask;
    for (int slot = slot(key, m); ; slot = (slot + 1) & m) {
      long k = t[2 * slot];
      if (k == key) {
        return slot;
      }
      if (k == 0) {
        return -1;
      }
    }
  }

  private static int slot(long key, int mask) {
    return (int) (key ^ (key >>> 32)) & mask;
  }

  private static void insert(long[] t, int m, long key, long value) {
    int slot = slot(key, m);
    while (t[2 * slot] != 0) {
      slot = (slot + 1) & m;
    }
    t[2 * slot] = key;
    t[2 * slot + 1] = value;
  }

  private void rehash(int capacity) {
    long[] old = table;
    long[] t = new long[2 * capacity];
    int m = capacity - 1;
    for (int i = 0; i < old.length; i += 2) {
      if (old[i] != 0) {
        insert(t, m, old[i], old[i + 1]);
      }
    }
    table = t;
    mask = m;
  }
}
