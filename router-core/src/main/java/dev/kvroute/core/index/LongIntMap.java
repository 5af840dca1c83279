package dev.kvroute.core.index;

/**
 * An open-addressing hash map from {@code long} keys to positive {@code int} values (linear probing,
 * backward-shift deletion, no tombstones), used to find a page's node by its chained hash. Keys are
 * expected to be well mixed already (they are XXH64 outputs), so the slot is the folded key.
 *
 * <p>Memory: 12 bytes per slot; the table doubles when more than 2/3 full and halves when less than
 * 1/8 full, so it holds between 18 and 96 bytes per entry (about 24 in steady state).
 *
 * <p>Not thread-safe; {@link RadixPrefixIndex} guards it with its lock.
 */
final class LongIntMap {
  private static final int MIN_CAPACITY = 16;

  private long[] keys;
  private int[] values; // 0 = empty slot
  private int mask;
  private int size;

  LongIntMap() {
    allocate(MIN_CAPACITY);
  }

  int size() {
    return size;
  }

  /** The value stored for {@code key}, or 0 if absent. */
  int get(long key) {
    long[] k = keys;
    int[] v = values;
    int m = mask;
    for (int slot = slot(key, m); ; slot = (slot + 1) & m) {
      int value = v[slot];
      if (value == 0) {
        return 0;
      }
      if (k[slot] == key) {
        return value;
      }
    }
  }

  /** Stores {@code value} (positive) for {@code key}, which must be absent. */
  void putAbsent(long key, int value) {
    if (size + 1 > (mask + 1) / 3 * 2) {
      rehash((mask + 1) * 2);
    }
    int slot = slot(key, mask);
    while (values[slot] != 0) {
      slot = (slot + 1) & mask;
    }
    keys[slot] = key;
    values[slot] = value;
    size++;
  }

  /** Removes {@code key}; returns whether it was present. */
  boolean remove(long key) {
    int m = mask;
    int slot = slot(key, m);
    while (true) {
      if (values[slot] == 0) {
        return false;
      }
      if (keys[slot] == key) {
        break;
      }
      slot = (slot + 1) & m;
    }
    // Backward-shift deletion: move later entries of the probe run into the hole when their home
    // slot does not lie cyclically in (hole, current].
    int hole = slot;
    for (int cur = (hole + 1) & m; values[cur] != 0; cur = (cur + 1) & m) {
      int home = slot(keys[cur], m);
      if (((cur - home) & m) >= ((cur - hole) & m)) {
        keys[hole] = keys[cur];
        values[hole] = values[cur];
        hole = cur;
      }
    }
    values[hole] = 0;
    keys[hole] = 0;
    size--;
    if (size < (m + 1) / 8 && m + 1 > MIN_CAPACITY) {
      rehash((m + 1) / 2);
    }
    return true;
  }

  /** Heap bytes of the arrays and this object (array and object headers included). */
  long estimatedBytes() {
    return 16 + 24 + (16 + 8L * keys.length) + (16 + 4L * values.length);
  }

  /** Number of slots (for invariant checks and tests). */
  int capacity() {
    return mask + 1;
  }

  private static int slot(long key, int mask) {
    return (int) (key ^ (key >>> 32)) & mask;
  }

  private void allocate(int capacity) {
    keys = new long[capacity];
    values = new int[capacity];
    mask = capacity - 1;
  }

  private void rehash(int capacity) {
    long[] oldKeys = keys;
    int[] oldValues = values;
    allocate(capacity);
    for (int i = 0; i < oldValues.length; i++) {
      if (oldValues[i] != 0) {
        int slot = slot(oldKeys[i], mask);
        while (values[slot] != 0) {
          slot = (slot + 1) & mask;
        }
        keys[slot] = oldKeys[i];
        values[slot] = oldValues[i];
      }
    }
  }
}
