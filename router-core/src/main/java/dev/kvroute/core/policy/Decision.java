package dev.kvroute.core.policy;

import dev.kvroute.core.BackendId;
import java.util.List;

/**
 * A routing decision and why it was taken.
 *
 * <p>Immutable and thread-safe.
 *
 * @param backend the chosen backend
 * @param policy name of the policy that decided
 * @param rule the rule that fired
 * @param candidates what the policy saw (matched tokens and load per backend)
 * @param detail one human-readable line (e.g. scores, thresholds), for logs and {@code /admin/explain}
 */
public record Decision(
    BackendId backend, String policy, Rule rule, List<Candidate> candidates, String detail) {
  public Decision {
    candidates = List.copyOf(candidates);
  }

  /** Matched tokens the chosen backend was credited with. */
  public int matchedTokens() {
    for (Candidate c : candidates) {
      if (c.backend().equals(backend)) {
        return c.matchedTokens();
      }
    }
    return 0;
  }
}
