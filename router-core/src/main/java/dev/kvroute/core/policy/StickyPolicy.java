package dev.kvroute.core.policy;

import dev.kvroute.core.BackendId;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.random.RandomGenerator;

/**
 * {@code sticky}: the session key (else the first prompt page's hash) on a consistent-hash ring of
 * the candidates with {@code virtualNodes} points each. A point's position depends only on its
 * backend's name, so when a backend leaves only the keys it held move, and they spread over the
 * others; when one joins it takes keys from all others in proportion.
 */
final class StickyPolicy extends AbstractPolicy {
  private final int virtualNodes;
  private volatile Ring ring;

  StickyPolicy(int virtualNodes, RandomGenerator rng) {
    super("sticky", rng);
    this.virtualNodes = virtualNodes;
    this.ring = new Ring(new long[0], new BackendId[0], Set.of());
  }

  /** Nothing of the prompt with a session key; without one, the tokens of its first 16 (the key, {@link RoutingContext#LEAD_TOKENS}). */
  @Override
  public PromptReads reads(String sessionKey) {
    return sessionKey != null ? PromptReads.NONE : PromptReads.TOKENS;
  }

  @Override
  Decision decide(RoutingContext context, Draws draws, boolean commit) {
    List<Candidate> cs = context.candidates();
    Ring r = ring;
    if (!r.sameMembers(cs)) {
      r = Ring.build(cs, virtualNodes);
      if (commit) {
        ring = r;
      }
    }
    boolean bySession = context.sessionKey() != null;
    long key =
        bySession ? Hashing.hash64(context.sessionKey()) : Hashing.mix64(context.leadHash());
    BackendId owner = r.owner(key);
    int chosen = 0;
    for (int i = 0; i < cs.size(); i++) {
      if (cs.get(i).backend().equals(owner)) {
        chosen = i;
        break;
      }
    }
    return decision(
        context, chosen, Rule.STICKY, bySession ? "by session key" : "by first-page hash");
  }

  /** An immutable ring: sorted positions and the backend owning each. */
  static final class Ring {
    private final long[] positions;
    private final BackendId[] owners;
    private final Set<BackendId> members;

    Ring(long[] positions, BackendId[] owners, Set<BackendId> members) {
      this.positions = positions;
      this.owners = owners;
      this.members = members;
    }

    static Ring build(List<Candidate> cs, int virtualNodes) {
      int n = cs.size() * virtualNodes;
      long[][] points = new long[n][];
      BackendId[] byIndex = new BackendId[cs.size()];
      Set<BackendId> members = new HashSet<>();
      int k = 0;
      for (int c = 0; c < cs.size(); c++) {
        BackendId b = cs.get(c).backend();
        byIndex[c] = b;
        members.add(b);
        for (int v = 0; v < virtualNodes; v++) {
          points[k++] = new long[] {Hashing.hash64(b.name() + "#" + v), c};
        }
      }
      // Ties on position (vanishingly rare) are broken by backend name, never by candidate order.
      Arrays.sort(
          points,
          (x, y) -> {
            int cmp = Long.compare(x[0], y[0]);
            return cmp != 0 ? cmp : byIndex[(int) x[1]].compareTo(byIndex[(int) y[1]]);
          });
      long[] positions = new long[n];
      BackendId[] owners = new BackendId[n];
      for (int i = 0; i < n; i++) {
        positions[i] = points[i][0];
        owners[i] = byIndex[(int) points[i][1]];
      }
      return new Ring(positions, owners, Set.copyOf(members));
    }

    boolean sameMembers(List<Candidate> cs) {
      if (cs.size() != members.size()) {
        return false;
      }
      for (Candidate c : cs) {
        if (!members.contains(c.backend())) {
          return false;
        }
      }
      return true;
    }

    /** The owner of the first point at or after {@code key}, wrapping around. */
    BackendId owner(long key) {
      int i = Arrays.binarySearch(positions, key);
      if (i < 0) {
        i = -i - 1;
      }
      return owners[i == positions.length ? 0 : i];
    }
  }
}
