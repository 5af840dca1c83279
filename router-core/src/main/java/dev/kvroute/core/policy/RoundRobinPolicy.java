package dev.kvroute.core.policy;

import dev.kvroute.core.BackendId;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.random.RandomGenerator;

/**
 * {@code round-robin}: the candidate that follows the last chosen backend in name order, wrapping
 * around (the candidates arrive sorted by name). With a fixed set of backends this is SGLang's shared
 * counter modulo the fleet. Unlike a counter modulo the candidates, it stays fair when the candidate
 * list changes between calls: a retry (the failed backend left out) goes to the next backend, and no
 * backend is skipped because a retry consumed its turn.
 */
final class RoundRobinPolicy extends AbstractPolicy {
  private final AtomicReference<BackendId> last = new AtomicReference<>();

  RoundRobinPolicy(RandomGenerator rng) {
    super("round-robin", rng);
  }

  /** Nothing of the prompt: the candidates' names only. */
  @Override
  public PromptReads reads(String sessionKey) {
    return PromptReads.NONE;
  }

  @Override
  Decision decide(RoutingContext context, Draws draws, boolean commit) {
    List<Candidate> cs = context.candidates();
    while (true) {
      BackendId previous = last.get();
      int chosen = after(cs, previous);
      // exact under concurrency: each committed choice advances from the one it read
      if (!commit || last.compareAndSet(previous, cs.get(chosen).backend())) {
        BackendId after = previous;
        return decision(context, chosen, Rule.ROUND_ROBIN,
            () -> after == null ? "first" : "after " + after);
      }
    }
  }

  /** The index of the first candidate named after {@code previous}, wrapping to 0. */
  private static int after(List<Candidate> cs, BackendId previous) {
    if (previous != null) {
      for (int i = 0; i < cs.size(); i++) {
        if (cs.get(i).backend().compareTo(previous) > 0) {
          return i;
        }
      }
    }
    return 0;
  }
}
