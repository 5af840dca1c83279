package dev.kvroute.core.policy;

import java.util.List;
import java.util.Objects;
import java.util.random.RandomGenerator;

/** Common plumbing: the name, the shared draws, and {@code choose}/{@code explain} on one method. */
abstract class AbstractPolicy implements RoutingPolicy {
  private final String name;
  private final Draws shared;

  AbstractPolicy(String name, RandomGenerator rng) {
    this.name = name;
    this.shared = Draws.shared(Objects.requireNonNull(rng, "rng"));
  }

  @Override
  public final String name() {
    return name;
  }

  @Override
  public final Decision choose(RoutingContext context) {
    return decide(context, shared, true);
  }

  @Override
  public final Decision explain(RoutingContext context) {
    return decide(context, Draws.preview(context), false);
  }

  /**
   * Decides for {@code context}, drawing from {@code draws}; advances internal state only if
   * {@code commit}.
   */
  abstract Decision decide(RoutingContext context, Draws draws, boolean commit);

  final Decision decision(RoutingContext context, int chosen, Rule rule, String detail) {
    List<Candidate> cs = context.candidates();
    return new Decision(cs.get(chosen).backend(), name, rule, cs, detail);
  }

  /** As {@link #decision(RoutingContext, int, Rule, String)}, the detail line written when asked for. */
  final Decision decision(RoutingContext context, int chosen, Rule rule, java.util.function.Supplier<String> detail) {
    List<Candidate> cs = context.candidates();
    return new Decision(cs.get(chosen).backend(), name, rule, cs, detail);
  }

  /** Each candidate's load: own plus foreign when {@code foreign} ({@link LoadMeasure#of}). */
  static long[] loads(List<Candidate> cs, LoadMeasure measure, boolean foreign) {
    long[] out = new long[cs.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = measure.of(cs.get(i).load(), foreign);
    }
    return out;
  }

  /** Matched tokens, negated (so that argMin prefers the longest match), capped at the prompt. */
  static long[] negatedMatches(RoutingContext context) {
    List<Candidate> cs = context.candidates();
    long[] out = new long[cs.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = -matched(cs.get(i), context.promptTokens());
    }
    return out;
  }

  static int matched(Candidate c, int promptTokens) {
    return Math.max(0, Math.min(c.matchedTokens(), promptTokens));
  }
}
