package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class PrimitiveMapsTest {

  @Test
  void longIntMapAgreesWithHashMapThroughGrowthRemovalAndShrink() {
    SplittableRandom random = new SplittableRandom(3);
    LongIntMap map = new LongIntMap();
    Map<Long, Integer> reference = new HashMap<>();
    List<Long> keys = new ArrayList<>();
    for (int op = 0; op < 200_000; op++) {
      boolean grow = (op / 20_000) % 2 == 0;
      if (random.nextInt(10) < (grow ? 7 : 3) || keys.isEmpty()) {
        // Clustered keys (small range, low bits shared) to exercise long probe runs.
        long key = random.nextInt(4) == 0 ? random.nextLong() : (long) random.nextInt(5000) << 32;
        if (!reference.containsKey(key)) {
          int value = 1 + random.nextInt(1_000_000);
          map.putAbsent(key, value);
          reference.put(key, value);
          keys.add(key);
        }
      } else {
        int i = random.nextInt(keys.size());
        long key = keys.get(i);
        keys.set(i, keys.get(keys.size() - 1));
        keys.remove(keys.size() - 1);
        assertThat(map.remove(key)).isTrue();
        reference.remove(key);
        assertThat(map.remove(key)).isFalse();
      }
      if (op % 997 == 0) {
        for (Map.Entry<Long, Integer> e : reference.entrySet()) {
          assertThat(map.get(e.getKey())).isEqualTo(e.getValue());
        }
        assertThat(map.get(random.nextLong() | 1)).isZero();
      }
      assertThat(map.size()).isEqualTo(reference.size());
    }
    for (long key : keys) {
      map.remove(key);
    }
    assertThat(map.size()).isZero();
    assertThat(map.capacity()).isEqualTo(16);
  }

  @Test
  void intIntMapAgreesWithHashMapThroughGrowthRemovalAndShrink() {
    SplittableRandom random = new SplittableRandom(5);
    IntIntMap map = new IntIntMap();
    Map<Integer, Integer> reference = new HashMap<>();
    List<Integer> keys = new ArrayList<>();
    for (int op = 0; op < 200_000; op++) {
      boolean grow = (op / 20_000) % 2 == 0;
      if (random.nextInt(10) < (grow ? 7 : 3) || keys.isEmpty()) {
        int key = 1 + random.nextInt(50_000);
        if (!reference.containsKey(key)) {
          int value = random.nextInt(1_000_000);
          map.putAbsent(key, value);
          reference.put(key, value);
          keys.add(key);
        }
      } else {
        int i = random.nextInt(keys.size());
        int key = keys.get(i);
        keys.set(i, keys.get(keys.size() - 1));
        keys.remove(keys.size() - 1);
        assertThat(map.remove(key)).isTrue();
        reference.remove(key);
      }
      if (op % 997 == 0) {
        for (Map.Entry<Integer, Integer> e : reference.entrySet()) {
          assertThat(map.get(e.getKey(), -1)).isEqualTo(e.getValue());
        }
        assertThat(map.get(60_000 + random.nextInt(1000), -1)).isEqualTo(-1);
      }
      assertThat(map.size()).isEqualTo(reference.size());
    }
  }

  @Test
  void longLongMapAgreesWithHashMapThroughGrowthRemovalAndShrink() {
    SplittableRandom random = new SplittableRandom(7);
    LongLongMap map = new LongLongMap();
    Map<Long, Long> reference = new HashMap<>();
    List<Long> keys = new ArrayList<>();
    for (int op = 0; op < 200_000; op++) {
      boolean grow = (op / 20_000) % 2 == 0;
      int action = random.nextInt(10);
      if (action < (grow ? 6 : 2) || keys.isEmpty()) {
        // Key 0 (kept beside the table), clustered keys sharing low bits, and spread ones.
        int kind = random.nextInt(8);
        long key = kind == 0 ? 0 : kind < 3 ? random.nextLong() : (long) random.nextInt(5000) << 32;
        long value = random.nextInt(4) == 0 ? 0 : random.nextLong(); // 0 is a value like any other
        if (!reference.containsKey(key)) {
          keys.add(key);
        }
        map.put(key, value);
        reference.put(key, value);
      } else if (action < 7) {
        long key = keys.get(random.nextInt(keys.size()));
        long value = random.nextLong();
        map.put(key, value); // replace
        reference.put(key, value);
      } else {
        int i = random.nextInt(keys.size());
        long key = keys.get(i);
        keys.set(i, keys.get(keys.size() - 1));
        keys.remove(keys.size() - 1);
        assertThat(map.remove(key)).isTrue();
        reference.remove(key);
        assertThat(map.remove(key)).isFalse();
        assertThat(map.containsKey(key)).isFalse();
      }
      if (op % 997 == 0) {
        for (Map.Entry<Long, Long> e : reference.entrySet()) {
          assertThat(map.containsKey(e.getKey())).isTrue();
          assertThat(map.get(e.getKey(), -1)).isEqualTo(e.getValue());
        }
        Map<Long, Long> visited = new HashMap<>();
        map.forEach((k, v) -> assertThat(visited.put(k, v)).isNull());
        assertThat(visited).isEqualTo(reference);
        long absent = random.nextLong() | 1;
        if (!reference.containsKey(absent)) {
          assertThat(map.get(absent, 42)).isEqualTo(42);
        }
      }
      assertThat(map.size()).isEqualTo(reference.size());
    }
    for (long key : keys) {
      map.remove(key);
    }
    assertThat(map.size()).isZero();
    assertThat(map.capacity()).isEqualTo(16);
    map.put(5, 6);
    map.put(0, 7);
    map.clear();
    assertThat(map.size()).isZero();
    assertThat(map.containsKey(0)).isFalse();
    assertThat(map.containsKey(5)).isFalse();
  }

  @Test
  void longIntMapCountsUpAndDownAndForgetsAKeyAtZero() {
    SplittableRandom random = new SplittableRandom(11);
    LongIntMap map = new LongIntMap();
    Map<Long, Integer> reference = new HashMap<>();
    for (int op = 0; op < 100_000; op++) {
      long key = (long) random.nextInt(3000) << 32 | random.nextInt(2);
      int current = reference.getOrDefault(key, 0);
      int delta = current > 0 && random.nextBoolean() ? -1 - random.nextInt(current) : 1 + random.nextInt(3);
      assertThat(map.add(key, delta)).isEqualTo(current + delta);
      reference.merge(key, delta, Integer::sum);
      reference.remove(key, 0);
      assertThat(map.size()).isEqualTo(reference.size());
      if (op % 997 == 0) {
        Map<Long, Integer> visited = new HashMap<>();
        map.forEach((k, v) -> visited.put(k, v));
        assertThat(visited).isEqualTo(reference);
      }
    }
    long held = reference.keySet().iterator().next();
    assertThatThrownBy(() -> map.add(held, -reference.get(held) - 1)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> map.add(-1L, -1)).isInstanceOf(IllegalArgumentException.class);
    assertThat(map.add(-1L, 0)).isZero();
    assertThat(map.get(-1L)).isZero();
    map.clear();
    assertThat(map.size()).isZero();
    assertThat(map.get(held)).isZero();
  }
}
