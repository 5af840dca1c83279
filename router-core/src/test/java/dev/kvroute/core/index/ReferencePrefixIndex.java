package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The naive model the radix index is checked against: per backend, the set of page-aligned token
 * prefixes it holds, each with the number of the insert that last used it; eviction scans for the
 * held prefixes no longer held prefix extends (leaves) and drops the least recently used one, deepest
 * first on a tie. Quadratic and obviously right.
 */
final class ReferencePrefixIndex {
  private final int pageSize;
  private final Map<BackendId, Long> capacityPages = new LinkedHashMap<>();
  private final Map<BackendId, Map<List<Integer>, Long>> held = new HashMap<>();
  private long operation;

  ReferencePrefixIndex(int pageSize) {
    this.pageSize = pageSize;
  }

  void addBackend(BackendId backend, long capacityTokens) {
    capacityPages.put(backend, capacityTokens / pageSize);
    held.computeIfAbsent(backend, b -> new HashMap<>());
    evict(backend);
  }

  void removeBackend(BackendId backend) {
    capacityPages.remove(backend);
    held.remove(backend);
  }

  void insert(BackendId backend, int[] tokens) {
    long pages = Math.min(tokens.length / pageSize, capacityPages.get(backend));
    operation++;
    Map<List<Integer>, Long> prefixes = held.get(backend);
    for (int d = 1; d <= pages; d++) {
      prefixes.put(prefix(tokens, d), operation);
    }
    evict(backend);
  }

  Map<BackendId, Integer> match(int[] tokens) {
    Map<BackendId, Integer> result = new HashMap<>();
    for (Map.Entry<BackendId, Map<List<Integer>, Long>> e : held.entrySet()) {
      int d = 0;
      while (d < tokens.length / pageSize && e.getValue().containsKey(prefix(tokens, d + 1))) {
        d++;
      }
      result.put(e.getKey(), d * pageSize);
    }
    return result;
  }

  long sizeTokens(BackendId backend) {
    Map<List<Integer>, Long> prefixes = held.get(backend);
    return prefixes == null ? 0 : (long) prefixes.size() * pageSize;
  }

  int distinctPages() {
    Set<List<Integer>> all = new HashSet<>();
    held.values().forEach(m -> all.addAll(m.keySet()));
    return all.size();
  }

  long totalCapacityPages() {
    return capacityPages.values().stream().mapToLong(Long::longValue).sum();
  }

  List<BackendId> backends() {
    return new ArrayList<>(capacityPages.keySet());
  }

  private void evict(BackendId backend) {
    Map<List<Integer>, Long> prefixes = held.get(backend);
    while (prefixes.size() > capacityPages.get(backend)) {
      List<Integer> victim = null;
      for (Map.Entry<List<Integer>, Long> candidate : prefixes.entrySet()) {
        if (!isLeaf(prefixes, candidate.getKey())) {
          continue;
        }
        if (victim == null
            || candidate.getValue() < prefixes.get(victim)
            || (candidate.getValue().equals(prefixes.get(victim))
                && candidate.getKey().size() > victim.size())) {
          victim = candidate.getKey();
        }
      }
      prefixes.remove(victim);
    }
  }

  private boolean isLeaf(Map<List<Integer>, Long> prefixes, List<Integer> prefix) {
    for (List<Integer> other : prefixes.keySet()) {
      if (other.size() == prefix.size() + pageSize && other.subList(0, prefix.size()).equals(prefix)) {
        return false;
      }
    }
    return true;
  }

  private List<Integer> prefix(int[] tokens, int pages) {
    List<Integer> list = new ArrayList<>(pages * pageSize);
    for (int i = 0; i < pages * pageSize; i++) {
      list.add(tokens[i]);
    }
    return List.copyOf(list);
  }
}
