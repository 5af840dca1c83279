package dev.kvroute.core.policy;

import dev.kvroute.core.BackendId;
import java.util.List;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * A routing decision and why it was taken.
 *
 * <p>Its {@link #detail} line is written when first asked for (logs, {@code /admin/explain}), not
 * when the decision is made: most decisions are never explained, and the line's numbers (ratios and
 * thresholds printed as decimals) cost about a microsecond per request to format.
 *
 * <p>Immutable and thread-safe (threads racing to the first {@link #detail} may each write the line, all
 * the same). Equal when every field, the detail line included, is equal.
 */
public final class Decision {
  private final BackendId backend;
  private final String policy;
  private final Rule rule;
  private final List<Candidate> candidates;
  private final Supplier<String> writer;
  private volatile String detail;

  /**
   * @param backend the chosen backend
   * @param policy name of the policy that decided
   * @param rule the rule that fired
   * @param candidates what the policy saw (matched tokens and load per backend); copied
   * @param detail one human-readable line (e.g. scores, thresholds), for logs and {@code /admin/explain}
   */
  public Decision(BackendId backend, String policy, Rule rule, List<Candidate> candidates, String detail) {
    this(backend, policy, rule, candidates, constant(Objects.requireNonNull(detail, "detail")));
    this.detail = detail;
  }

  private static Supplier<String> constant(String line) {
    return () -> line;
  }

  /**
   * As the other constructor, with the detail line written by {@code detail} when first asked for;
   * {@code detail} must only read values fixed when the decision was made.
   */
  public Decision(BackendId backend, String policy, Rule rule, List<Candidate> candidates, Supplier<String> detail) {
    this.backend = Objects.requireNonNull(backend, "backend");
    this.policy = Objects.requireNonNull(policy, "policy");
    this.rule = Objects.requireNonNull(rule, "rule");
    this.candidates = List.copyOf(candidates);
    this.writer = Objects.requireNonNull(detail, "detail");
  }

  /** The chosen backend. */
  public BackendId backend() {
    return backend;
  }

  /** The name of the policy that decided. */
  public String policy() {
    return policy;
  }

  /** The rule that fired. */
  public Rule rule() {
    return rule;
  }

  /** What the policy saw: matched tokens and load per backend (immutable). */
  public List<Candidate> candidates() {
    return candidates;
  }

  /** One human-readable line (e.g. scores, thresholds), for logs and {@code /admin/explain}. */
  public String detail() {
    String d = detail;
    if (d == null) {
      d = writer.get();
      detail = d;
    }
    return d;
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

  @Override
  public boolean equals(Object o) {
    return o instanceof Decision d && backend.equals(d.backend) && policy.equals(d.policy) && rule == d.rule
        && candidates.equals(d.candidates) && detail().equals(d.detail());
  }

  @Override
  public int hashCode() {
    return Objects.hash(backend, policy, rule, candidates, detail());
  }

  @Override
  public String toString() {
    return "Decision[backend=" + backend + ", policy=" + policy + ", rule=" + rule + ", candidates=" + candidates
        + ", detail=" + detail() + "]";
  }
}
