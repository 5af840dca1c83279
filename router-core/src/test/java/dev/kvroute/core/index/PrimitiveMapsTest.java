package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;

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
}
