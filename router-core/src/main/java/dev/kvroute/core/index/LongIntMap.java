package dev.kvroute.core.index;

/**
 * An open-addressing hash map from {@code long} keys to positive {@code int} values (linear probing,
 * backward-shift deletion, no tombstones), used to find a page's node by its chained hash. Keys are
 * expected to be well mixed already (they are XXH64 outputs), so the slot is the folded key. Key and
 * value share one 16-byte slot of a single array, so a lookup touches one cache line.
 *
 * <p>Memory: 16 bytes per slot; the table doubles when more than 2/3 full and halves when less than
 * 1/8 full, so it holds between 24 and 128 bytes per entry (24-48 while growing).
 *
 * <p>Not thread-safe; {@link RadixPrefixIndex} guards it with its lock, {@link PreciseView} (page
 * counts) its backend's lock.
 */
final class LongIntMap {
  private static final int MIN_CAPACITY = 16;

  /** Receives one entry of {@link #forEach}. */
  @FunctionalInterface
  interface Visitor {
    void accept(long key, int value);
  }

  private long[] table; // slot i: table[2i] = key, table[2i + 1] = value (0 = empty slot)
  private int mask;
  private int size;

  LongIntMap() {
    table = new long[2 * MIN_CAPACITY];
    mask = MIN_CAPACITY - 1;
  }

  int size() {
    return size;
  }

  /** The value stored for {@code key}, or 0 if absent. */
  int get(long key) {
    long[] t = table;
    int m = mask;
    for (int slot = slot(key, m); ; slot = (slot + 1) & m) {
      int value = (int) t[2 * slot + 1];
      if (value == 0) {
        return 0;
      }
      if (t[2 * slot] == key) {
        return value;
      }
    }
  }

  /** Stores {@code value} (positive) for {@code key}, which must be absent. */
  void putAbsent(long key, int value) {
    if (size + 1 > (mask + 1) / 3 * 2) {
      rehash((mask + 1) * 2);
    }
    insert(table, mask, key, value);
    size++;
  }

  /**
   * Adds {@code delta} to the value of {@code key} (an absent key counts as 0) and returns the new
   * value; the key is removed when the result is 0. The result must not be negative.
   *
   * @throws IllegalArgumentException if the result would be negative
   */
  int add(long key, int delta) {
    long[] t = table;
    int m = mask;
    for (int slot = slot(key, m); ; slot = (slot + 1) & m) {
      int value = (int) t[2 * slot + 1];
      if (value == 0) {
        break;
      }
      if (t[2 * slot] == key) {
        int result = value + delta;
        if (result < 0) {
          throw new IllegalArgumentException("count of " + key + " would be " + result + " (expected: >= 0)");
        }
        if (result == 0) {
          remove(key);
        } else {
          t[2 * slot + 1] = result;
        }
        return result;
      }
    }
    if (delta < 0) {
      throw new IllegalArgumentException("count of absent " + key + " would be " + delta + " (expected: >= 0)");
    }
    if (delta > 0) {
      putAbsent(key, delta);
    }
    return delta;
  }

  /** Removes every entry and returns to the minimum capacity. */
  void clear() {
    table = new long[2 * MIN_CAPACITY];
    mask = MIN_CAPACITY - 1;
    size = 0;
  }

  /** Calls {@code visitor} for every entry, in no particular order; it must not change the map. */
  void forEach(Visitor visitor) {
    long[] t = table;
    for (int i = 0; i < t.length; i += 2) {
      if (t[i + 1] != 0) {
        visitor.accept(t[i], (int) t[i + 1]);
      }
    }
  }

  /** Removes {@code key}; returns whether it was present. */
  boolean remove(long key) {
    long[] t = table;
    int m = mask;
    int slot = slot(key, m);
    while (true) {
      if (t[2 * slot + 1] == 0) {
        return false;
      }
      if (t[2 * slot] == key) {
        break;
      }
      slot = (slot + 1) & m;
    }
    // Backward-shift deletion: move later entries of the probe run into the hole when their home
    // slot does not lie cyclically in (hole, current].
    int hole = slot;
    for (int cur = (hole + 1) & m; t[2 * cur + 1] != 0; cur = (cur + 1) & m) {
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

  /** Heap bytes of the table and this object (array and object headers included). */
  long estimatedBytes() {
    return 24 + 16 + 8L * table.length;
  }

  /** Number of slots (for tests). */
  int capacity() {
    return mask + 1;
  }

  private static int slot(long key, int mask) {
    return (int) (key ^ (key >>> 32)) & mask;
  }

  private static void insert(long[] t, int m, long key, int value) {
    int slot = slot(key, m);
    while (t[2 * slot + 1] != 0) {
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
      if (old[i + 1] != 0) {
        insert(t, m, old[i], (int) old[i + 1]);
      }
    }
    table = t;
    mask = m;
  }
}
