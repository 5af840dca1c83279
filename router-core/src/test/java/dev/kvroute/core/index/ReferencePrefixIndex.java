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
 * The one naive prefix-index model of the tests (the radix index's randomized test checks against it,
 * and router-core tests route through it): per backend, the set of page-aligned token
 * prefixes it holds, each with the number of the insert that last used it; eviction scans for the
 * held prefixes no longer held prefix extends (leaves) and drops the least recently used one, deepest
 * first on a tie, skipping pinned prefixes (pin counts per prefix). Quadratic and obviously right.
 */
public final class ReferencePrefixIndex implements PrefixIndex {
  private final int pageSize;
  private final Map<BackendId, Long> capacityPages = new LinkedHashMap<>();
  private final Map<BackendId, Map<List<Integer>, Long>> held = new HashMap<>();
  private final Map<BackendId, Map<List<Integer>, Integer>> pins = new HashMap<>();
  /**
   * Per backend, the prefixes the last pinning insert added, not counted against the capacity until
   * the backend's next change, and that insert's pin.
   */
  private final Map<BackendId, long[]> provisional = new HashMap<>();
  private final Map<BackendId, Object> provisionalPin = new HashMap<>();
  private long operation;
  private int limitStops;

  public ReferencePrefixIndex(int pageSize) {
    this.pageSize = pageSize;
  }

  @Override
  public void addBackend(BackendId backend, long capacityTokens) {
    capacityPages.put(backend, capacityTokens / pageSize);
    held.computeIfAbsent(backend, b -> new HashMap<>());
    pins.computeIfAbsent(backend, b -> new HashMap<>());
    provisional.computeIfAbsent(backend, b -> new long[1]);
    settle(backend);
    evict(backend);
  }

  @Override
  public void removeBackend(BackendId backend) {
    capacityPages.remove(backend);
    held.remove(backend);
    pins.remove(backend);
    provisional.remove(backend);
    provisionalPin.remove(backend);
  }

  private void settle(BackendId backend) {
    provisional.get(backend)[0] = 0;
    provisionalPin.remove(backend);
  }

  @Override
  public void insert(BackendId backend, int[] tokens) {
    insertAndPin(backend, tokens, false);
  }

  /** Inserts and, if {@code pin}, pins the inserted prefixes until the returned pin ends. */
  Pin insertAndPin(BackendId backend, int[] tokens, boolean pin) {
    if (!capacityPages.containsKey(backend)) {
      throw new IllegalArgumentException("backend: " + backend + " is not registered");
    }
    long pages = Math.min(tokens.length / pageSize, capacityPages.get(backend));
    if (pages == 0) {
      return new Pin() {
        @Override
        public void confirm() {}

        @Override
        public void release() {}

        @Override
        public void abandon() {}
      };
    }
    settle(backend);
    long insertOp = ++operation;
    Map<List<Integer>, Long> prefixes = held.get(backend);
    Map<List<Integer>, Integer> counts = pins.get(backend);
    List<List<Integer>> pinned = new ArrayList<>();
    List<List<Integer>> created = new ArrayList<>();
    for (int d = 1; d <= pages; d++) {
      List<Integer> prefix = prefix(tokens, d);
      if (!prefixes.containsKey(prefix)) {
        // a page that needs room evicts one this insert has not touched (unless pinning: provisional)
        if (!pin && prefixes.size() >= capacityPages.get(backend)) {
          evictOne(backend, insertOp);
        }
        long limit = 2 * capacityPages.get(backend);
        if (prefixes.size() >= limit && prefixes.size() - created.size() > capacityPages.get(backend)) {
          evictOne(backend, insertOp); // a page the end of this insert would evict anyway
        }
        if (prefixes.size() >= limit) {
          limitStops++;
          break; // a view holds at most twice its capacity: the rest of the prompt is not indexed
        }
        created.add(prefix);
      }
      prefixes.put(prefix, insertOp);
      if (pin) {
        counts.merge(prefix, 1, Integer::sum);
        pinned.add(prefix);
      }
    }
    boolean[] ended = {false};
    Pin refPin = new Pin() {
      @Override
      public void confirm() {
        if (!ended[0] && pins.get(backend) == counts && provisionalPin.get(backend) == this) {
          settle(backend);
          evict(backend);
        }
      }

      @Override
      public void release() {
        end(false);
      }

      @Override
      public void abandon() {
        end(true);
      }

      private void end(boolean abandoned) {
        if (ended[0] || pins.get(backend) != counts) {
          ended[0] = true;
          return;
        }
        ended[0] = true;
        settle(backend);
        List<List<Integer>> rest = new ArrayList<>(pinned);
        if (abandoned) {
          for (int i = created.size() - 1; i >= 0; i--) {
            List<Integer> prefix = created.get(i);
            if (!Integer.valueOf(1).equals(counts.get(prefix)) || prefixes.get(prefix) != insertOp) {
              break;
            }
            counts.remove(prefix);
            prefixes.remove(prefix);
            rest.remove(rest.size() - 1);
          }
        }
        operation++; // the release marks the pages used now
        for (List<Integer> prefix : rest) {
          counts.merge(prefix, -1, (a, b) -> a + b == 0 ? null : a + b);
          prefixes.put(prefix, operation);
        }
        evict(backend);
      }
    };
    if (pin) {
      provisional.get(backend)[0] = created.size();
      provisionalPin.put(backend, refPin);
    }
    evict(backend);
    return refPin;
  }

  /** Inserts that stopped because their view held twice its capacity. */
  int limitStops() {
    return limitStops;
  }

  long capacityPages(BackendId backend) {
    return capacityPages.get(backend);
  }

  long pinnedPages(BackendId backend) {
    Map<List<Integer>, Integer> counts = pins.get(backend);
    return counts == null ? 0 : counts.size();
  }

  @Override
  public PrefixMatch match(int[] tokens) {
    Map<BackendId, Integer> result = new HashMap<>();
    for (Map.Entry<BackendId, Map<List<Integer>, Long>> e : held.entrySet()) {
      int d = 0;
      while (d < tokens.length / pageSize && e.getValue().containsKey(prefix(tokens, d + 1))) {
        d++;
      }
      result.put(e.getKey(), d * pageSize);
    }
    return new PrefixMatch(tokens.length, result);
  }

  @Override
  public long sizeTokens(BackendId backend) {
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

  @Override
  public Pin insertAndPin(BackendId backend, Prompt prompt) {
    return insertAndPin(backend, prompt.tokens(), true);
  }

  @Override
  public void forget(BackendId backend) {
    if (capacityPages.containsKey(backend)) {
      held.put(backend, new HashMap<>());
      pins.put(backend, new HashMap<>()); // the old pins see another map: they become no-ops
      settle(backend);
    }
  }

  @Override
  public long estimatedBytes() {
    return 0;
  }

  @Override
  public int pageSizeTokens() {
    return pageSize;
  }

  /** The model is its own specification: nothing to check. */
  @Override
  public void checkInvariants() {}

  private void evict(BackendId backend) {
    while (held.get(backend).size() - provisional.get(backend)[0] > capacityPages.get(backend)
        && evictOne(backend, -1)) {
      // one prefix per step; when everything left is pinned the view stays over its capacity
    }
  }

  /**
   * Drops the least recently used unpinned leaf prefix (deepest first on a tie), skipping those last
   * used by operation {@code keep}; returns whether there was one.
   */
  private boolean evictOne(BackendId backend, long keep) {
    Map<List<Integer>, Long> prefixes = held.get(backend);
    Map<List<Integer>, Integer> counts = pins.get(backend);
    List<Integer> victim = null;
    for (Map.Entry<List<Integer>, Long> candidate : prefixes.entrySet()) {
      if (counts.containsKey(candidate.getKey()) || candidate.getValue() == keep
          || !isLeaf(prefixes, candidate.getKey())) {
        continue;
      }
      if (victim == null
          || candidate.getValue() < prefixes.get(victim)
          || (candidate.getValue().equals(prefixes.get(victim))
              && candidate.getKey().size() > victim.size())) {
        victim = candidate.getKey();
      }
    }
    if (victim == null) {
      return false;
    }
    prefixes.remove(victim);
    return true;
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
