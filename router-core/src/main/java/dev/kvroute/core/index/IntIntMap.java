package dev.kvroute.core.index;

/**
 * An open-addressing hash map from positive {@code int} keys to {@code int} values (linear probing
 * with Fibonacci hashing, backward-shift deletion, no tombstones), used for a backend's node-to-entry
 * lookup. Key 0 marks an empty slot, so keys must be positive (node 0 is the root, never stored).
 *
 * <p>Memory: 8 bytes per slot; the table doubles when more than 2/3 full and halves when less than
 * 1/8 full.
 *
 * <p>Not thread-safe; {@link RadixPrefixIndex} guards it with its lock.
 */
final class IntIntMap {
  private static final int MIN_CAPACITY = 16;

  private int[] keys; // 0 = empty slot
  private int[] values;
  private int mask;
  private int shift;
  private int size;

  IntIntMap() {
    allocate(MIN_CAPACITY);
  }

  int size() {
    return size;
  }

  /** The value stored for {@code key}, or {@code missing} if absent. */
  int get(int key, int missing) {
    int[] k = keys;
    int m = mask;
    for (int slot = slot(key); ; slot = (slot + 1) & m) {
      int present = k[slot];
      if (present == key) {
        return values[slot];
      }
      if (present == 0) {
        return missing;
      }
    }
  }

  /** Stores {@code value} for {@code key} (positive), which must be absent. */
  void putAbsent(int key, int value) {
    if (size + 1 > (mask + 1) / 3 * 2) {
      rehash((mask + 1) * 2);
    }
    int slot = slot(key);
    while (keys[slot] != 0) {
      slot = (slot + 1) & mask;
    }
    keys[slot] = key;
    values[slot] = value;
    size++;
  }

  /** Removes {@code key}; returns whether it was present. */
  boolean remove(int key) {
    int m = mask;
    int slot = slot(key);
    while (true) {
      int present = keys[slot];
      if (present == 0) {
        return false;
      }
      if (present == key) {
        break;
      }
      slot = (slot + 1) & m;
    }
    int hole = slot;
    for (int cur = (hole + 1) & m; keys[cur] != 0; cur = (cur + 1) & m) {
      int home = slot(keys[cur]);
      if (((cur - home) & m) >= ((cur - hole) & m)) {
        keys[hole] = keys[cur];
        values[hole] = values[cur];
        hole = cur;
      }
    }
    keys[hole] = 0;
    size--;
    if (size < (m + 1) / 8 && m + 1 > MIN_CAPACITY) {
      rehash((m + 1) / 2);
    }
    return true;
  }

  /** Heap bytes of the arrays and this object (array and object headers included). */
  long estimatedBytes() {
    return 16 + 24 + (16 + 4L * keys.length) + (16 + 4L * values.length);
  }

  private int slot(int key) {
    return (key * 0x9E3779B9) >>> shift;
  }

  private void allocate(int capacity) {
    keys = new int[capacity];
    values = new int[capacity];
    mask = capacity - 1;
    shift = Integer.numberOfLeadingZeros(capacity) + 1;
  }

  private void rehash(int capacity) {
    int[] oldKeys = keys;
    int[] oldValues = values;
    allocate(capacity);
    for (int i = 0; i < oldKeys.length; i++) {
      if (oldKeys[i] != 0) {
        int slot = slot(oldKeys[i]);
        while (keys[slot] != 0) {
          slot = (slot + 1) & mask;
        }
        keys[slot] = oldKeys[i];
        values[slot] = oldValues[i];
      }
    }
  }
}
