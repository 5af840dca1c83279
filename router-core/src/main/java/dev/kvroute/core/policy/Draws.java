package dev.kvroute.core.policy;

import java.util.SplittableRandom;
import java.util.random.RandomGenerator;

/** The source of a policy's random draws: the shared injected generator, or a private preview one. */
interface Draws {
  /** A uniform int in {@code [0, bound)}. */
  int nextInt(int bound);

  /** Draws from {@code rng}, serialized because most {@link RandomGenerator}s are not thread-safe. */
  static Draws shared(RandomGenerator rng) {
    return bound -> {
      synchronized (rng) {
        return rng.nextInt(bound);
      }
    };
  }

  /** Draws from a fresh generator seeded by {@code context}: deterministic, touches no shared state. */
  static Draws preview(RoutingContext context) {
    long seed = context.leadHash() * 0x9E3779B97F4A7C15L + context.promptTokens();
    if (context.sessionKey() != null) {
      seed ^= Hashing.hash64(context.sessionKey());
    }
    SplittableRandom rng = new SplittableRandom(seed);
    return rng::nextInt;
  }
}
