package dev.kvroute.core.index;

/**
 * An open-addressing hash map from positive {@code int} keys to {@code int} values (linear probing
 * with Fibonacci hashing, backward-shift deletion, no tombstones), used for a backend's node-to-entry
 * lookup. Key 0 marks an empty slot, so keys must be positive (node 0 is the root, never stored). Key
 * and value share one 8-byte slot of a single array, so a lookup touches one cache line.
 *
 * <p>Memory: 8 bytes per slot; the table doubles when more than 2/3 full and halves when less than
 * 1/8 full.
 *
 * <p>Not thread-safe; {@link RadixPrefixIndex} guards it with its lock.
 */
final class IntIntMap {
  private static final int MIN_CAPACITY = 16;

  private int[] table; // slot i: table[2i] = key (0 = empty), table[2i + 1] = value
  private int mask;
  private int shift;
  private int size;

  IntIntMap() {
    this(MIN_CAPACITY);
  }

  /** A map whose table starts with room for {@code expected} keys without growing. */
  IntIntMap(int expected) {
    int capacity = MIN_CAPACITY;
    while (capacity / 3 * 2 < expected) {
      capacity *= 2;
    }
    allocate(capacity);
  }

  int size() {
    return size;
  }

  /** The value stored for {@code key}, or {@code missing} if absent. */
  int get(int key, int missing) {
    int[] t = table;
    int m = mask;
    for (int slot = slot(key); ; slot = (slot + 1) & m) {
      int present = t[2 * slot];
      if (present == key) {
        return t[2 * slot + 1];
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
    while (table[2 * slot] != 0) {
      slot = (slot + 1) & mask;
    }
    table[2 * slot] = key;
    table[2 * slot + 1] = value;
    size++;
  }

  /** Removes {@code key}; returns whether it was present. */
  boolean remove(int key) {
    int[] t = table;
    int m = mask;
    int slot = slot(key);
    while (true) {
      int present = t[2 * slot];
      if (present == 0) {
        return false;
      }
      if (present == key) {
        break;
      }
      slot = (slot + 1) & m;
    }
    int hole = slot;
    for (int cur = (hole + 1) & m; t[2 * cur] != 0; cur = (cur + 1) & m) {
      int home = slot(t[2 * cur]);
      if (((cur - home) & m) >= ((cur - hole) & m)) {
        t[2 * hole] = t[2 * cur];
        t[2 * hole + 1] = t[2 * cur + 1];
        hole = cur;
      }
    }
    t[2 * hole] = 0;
    size--;
    if (size < (m + 1) / 8 && m + 1 > MIN_CAPACITY) {
      rehash((m + 1) / 2);
    }
    return true;
  }

  /** Heap bytes of the table and this object (array and object headers included). */
  long estimatedBytes() {
    return 32 + 16 + 4L * table.length;
  }

  private int slot(int key) {
    return (key * 0x9E3779B9) >>> shift;
  }

  private void allocate(int capacity) {
    table = new int[2 * capacity];
    mask = capacity - 1;
    shift = Integer.numberOfLeadingZeros(capacity) + 1;
  }

  private void rehash(int capacity) {
    int[] old = table;
    allocate(capacity);
    for (int i = 0; i < old.length; i += 2) {
      if (old[i] != 0) {
        int slot = slot(old[i]);
        while (table[2 * slot] != 0) {
          slot = (slot + 1) & mask;
        }
        table[2 * slot] = old[i];
        table[2 * slot + 1] = old[i + 1];
      }
    }
  }
}
