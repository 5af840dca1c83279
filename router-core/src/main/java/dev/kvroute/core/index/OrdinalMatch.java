package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;

/**
 * A {@link PrefixMatch}'s matched tokens per backend as {@link RadixPrefixIndex#match} computes them:
 * an array by backend ordinal and the index's id-to-ordinal snapshot, so that a match over N
 * backends costs one array, not N map entries and N boxed integers; {@link #tokens} reads one backend
 * with one lookup. A read-only {@link Map} (equal to any map with the same entries).
 *
 * <p>Immutable and thread-safe (the array is not modified after construction; the ordinals map is an
 * immutable snapshot).
 */
final class OrdinalMatch extends AbstractMap<BackendId, Integer> {
  private final Map<BackendId, Integer> ordinals;
  private final int[] tokensByOrdinal;

  /**
   * @param ordinals every backend of the index and its ordinal (immutable)
   * @param tokensByOrdinal matched tokens by ordinal (owned by this object from now on)
   */
  OrdinalMatch(Map<BackendId, Integer> ordinals, int[] tokensByOrdinal) {
    this.ordinals = ordinals;
    this.tokensByOrdinal = tokensByOrdinal;
  }

  /** Matched tokens of {@code backend}, or {@code 0} when it is not one of the index's backends. */
  int tokens(BackendId backend) {
    Integer ordinal = ordinals.get(backend);
    return ordinal == null ? 0 : tokensByOrdinal[ordinal];
  }

  @Override
  public Integer get(Object key) {
    Integer ordinal = ordinals.get(key);
    return ordinal == null ? null : tokensByOrdinal[ordinal];
  }

  @Override
  public boolean containsKey(Object key) {
    return ordinals.containsKey(key);
  }

  @Override
  public int size() {
    return ordinals.size();
  }

  @Override
  public Set<Entry<BackendId, Integer>> entrySet() {
    return new AbstractSet<>() {
      @Override
      public Iterator<Entry<BackendId, Integer>> iterator() {
        Iterator<Entry<BackendId, Integer>> it = ordinals.entrySet().iterator();
        return new Iterator<>() {
          @Override
          public boolean hasNext() {
            return it.hasNext();
          }

          @Override
          public Entry<BackendId, Integer> next() {
            Entry<BackendId, Integer> e = it.next();
            return Map.entry(e.getKey(), tokensByOrdinal[e.getValue()]);
          }
        };
      }

      @Override
      public int size() {
        return ordinals.size();
      }
    };
  }
}
