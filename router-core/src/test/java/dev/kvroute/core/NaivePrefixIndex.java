package dev.kvroute.core;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.index.PrefixMatch;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * A brute-force {@link PrefixIndex} for RouterCore tests: per backend, a map from every held
 * page-aligned prefix to when it was last used; eviction drops the least recently used prefix that
 * no held prefix extends. Synchronized; O(everything) per call.
 */
final class NaivePrefixIndex implements PrefixIndex {
  private final int pageSize;
  private final Map<BackendId, Long> capacity = new HashMap<>();
  private final Map<BackendId, Map<List<Integer>, Long>> held = new HashMap<>();
  private long clock;

  NaivePrefixIndex(int pageSize) {
    this.pageSize = pageSize;
  }

  @Override
  public synchronized void addBackend(BackendId backend, long capacityTokens) {
    capacity.put(backend, capacityTokens);
    held.computeIfAbsent(backend, b -> new HashMap<>());
    evict(backend);
  }

  @Override
  public synchronized void removeBackend(BackendId backend) {
    capacity.remove(backend);
    held.remove(backend);
  }

  @Override
  public synchronized void forget(BackendId backend) {
    if (held.containsKey(backend)) {
      held.get(backend).clear();
    }
  }

  private List<Integer> prefix(int[] tokens, int pages) {
    return IntStream.of(Arrays.copyOf(tokens, pages * pageSize)).boxed().collect(Collectors.toList());
  }

  @Override
  public synchronized PrefixMatch match(int[] tokens) {
    Map<BackendId, Integer> out = new HashMap<>();
    int pages = tokens.length / pageSize;
    for (Map.Entry<BackendId, Map<List<Integer>, Long>> e : held.entrySet()) {
      int k = 0;
      while (k < pages && e.getValue().containsKey(prefix(tokens, k + 1))) {
        k++;
      }
      out.put(e.getKey(), k * pageSize);
    }
    return new PrefixMatch(tokens.length, out);
  }

  @Override
  public synchronized void insert(BackendId backend, int[] tokens) {
    Map<List<Integer>, Long> h = held.get(backend);
    if (h == null) {
      throw new IllegalArgumentException("backend: " + backend + " (expected: registered)");
    }
    for (int k = 1; k <= tokens.length / pageSize; k++) {
      h.put(prefix(tokens, k), ++clock);
    }
    evict(backend);
  }

  private void evict(BackendId backend) {
    Map<List<Integer>, Long> h = held.get(backend);
    while ((long) h.size() * pageSize > capacity.get(backend)) {
      List<Integer> victim = null;
      for (Map.Entry<List<Integer>, Long> e : h.entrySet()) {
        boolean leaf =
            h.keySet().stream()
                .noneMatch(o -> o.size() == e.getKey().size() + pageSize
                    && o.subList(0, e.getKey().size()).equals(e.getKey()));
        if (leaf && (victim == null || e.getValue() < h.get(victim))) {
          victim = e.getKey();
        }
      }
      h.remove(victim);
    }
  }

  @Override
  public synchronized long sizeTokens(BackendId backend) {
    Map<List<Integer>, Long> h = held.get(backend);
    return h == null ? 0 : (long) h.size() * pageSize;
  }

  @Override
  public long estimatedBytes() {
    return 0;
  }

  @Override
  public int pageSizeTokens() {
    return pageSize;
  }

  @Override
  public void checkInvariants() {}
}
