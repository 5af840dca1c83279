package dev.kvroute.core.policy;

import java.util.concurrent.atomic.AtomicLong;
import java.util.random.RandomGenerator;

/** {@code round-robin}: a shared counter modulo the number of candidates, as SGLang's. */
final class RoundRobinPolicy extends AbstractPolicy {
  private final AtomicLong next = new AtomicLong();

  RoundRobinPolicy(RandomGenerator rng) {
    super("round-robin", rng);
  }

  @Override
  Decision decide(RoutingContext context, Draws draws, boolean commit) {
    long ticket = commit ? next.getAndIncrement() : next.get();
    int chosen = (int) Math.floorMod(ticket, (long) context.candidates().size());
    return decision(context, chosen, Rule.ROUND_ROBIN, "ticket " + ticket);
  }
}
