package dev.kvroute.bench.workload;

import java.util.List;
import java.util.Objects;

/**
 * A generated workload: the sessions every policy replays, and the fleet they are meant for.
 *
 * <p>Immutable and thread-safe.
 *
 * @param name short name ({@code seed})
 * @param sessions the sessions, ordered by index
 * @param fleet the engines the workload runs against
 * @param meanFinalHistoryTokens mean over sessions of the tokens an engine holds when a session ends
 *     (its last prompt plus its last reply), the unit of the fleet's KV capacity
 */
public record Workload(
    String name, List<Session> sessions, FleetSpec fleet, double meanFinalHistoryTokens) {
  public Workload {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(fleet, "fleet");
    sessions = List.copyOf(sessions);
  }

  /** Requests in the whole workload (one per turn). */
  public int requests() {
    int n = 0;
    for (Session s : sessions) {
      n += s.turns().size();
    }
    return n;
  }

  /** A copy with another fleet (other capacity or replica count), the same sessions. */
  public Workload withFleet(FleetSpec newFleet) {
    return new Workload(name, sessions, newFleet, meanFinalHistoryTokens);
  }
}
