package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Drives the radix index and {@link ReferencePrefixIndex} with the same seeded stream of operations
 * on shared-prefix-heavy prompts (a few system prompts, growing multi-turn histories, random short
 * prompts over a tiny vocabulary) and requires them to agree on every match and every size, with the
 * invariants checked after every operation. Some inserts pin their pages (as routed, in-flight
 * requests) and are released later, some twice.
 */
class RadixPrefixIndexRandomizedTest {

  @ParameterizedTest(name = "seed {0}, page {1}, up to {2} backends, {3} ops, up to {4} pins")
  @CsvSource({
    "1, 4, 5, 4000, 12",
    "2, 4, 3, 4000, 12",
    "3, 2, 6, 3000, 12",
    "4, 8, 5, 3000, 12",
    "5, 1, 4, 3000, 12",
    "6, 4, 70, 1500, 12",
    "7, 4, 2, 3000, 60",
    "8, 2, 3, 3000, 80",
  })
  void agreesWithNaiveModelOnEveryMatch(
      long seed, int page, int maxBackends, int operations, int maxPins) {
    SplittableRandom random = new SplittableRandom(seed);
    AtomicLong clock = new AtomicLong();
    CheckedPrefixIndex index =
        new CheckedPrefixIndex(page, () -> clock.addAndGet(random.nextInt(3))); // may stand still
    ReferencePrefixIndex reference = new ReferencePrefixIndex(page);

    List<int[]> systemPrompts = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      systemPrompts.add(randomTokens(random, random.nextInt(4 * page), 3));
    }
    List<int[]> sessions = new ArrayList<>();
    List<int[]> recent = new ArrayList<>();
    int nextBackend = 0;
    int inserts = 0;
    int evictionsSeen = 0;
    int pinsReleased = 0;
    List<PrefixIndex.Pin> pins = new ArrayList<>();
    List<PrefixIndex.Pin> referencePins = new ArrayList<>();
    int pinsAbandoned = 0;
    int pinsConfirmed = 0;

    for (int op = 0; op < operations; op++) {
      List<BackendId> backends = reference.backends();
      int kind = random.nextInt(100);
      if (backends.isEmpty() || (kind < 4 && backends.size() < maxBackends)) {
        BackendId id = BackendId.of("b" + nextBackend++);
        long capacity = randomCapacity(random, page);
        index.addBackend(id, capacity);
        reference.addBackend(id, capacity);
      } else if (kind < 7) {
        BackendId id = backends.get(random.nextInt(backends.size()));
        long capacity = randomCapacity(random, page);
        index.addBackend(id, capacity);
        reference.addBackend(id, capacity);
      } else if (kind < 9 && backends.size() > 1) {
        BackendId id = backends.get(random.nextInt(backends.size()));
        index.removeBackend(id);
        reference.removeBackend(id);
      } else if (kind < 13 && !pins.isEmpty()) {
        // an in-flight request passes its first token: its new pages start to count
        int i = random.nextInt(pins.size());
        pins.get(i).confirm();
        referencePins.get(i).confirm();
        pinsConfirmed++;
      } else if (kind < 20 && !pins.isEmpty()) {
        // end an in-flight request (served, or abandoned: its new pages are taken back); now and
        // then end one again, either way (must be a no-op)
        int i = random.nextInt(pins.size());
        if (random.nextInt(3) == 0) {
          pins.get(i).abandon();
          referencePins.get(i).abandon();
          pinsAbandoned++;
        } else {
          pins.get(i).release();
          referencePins.get(i).release();
        }
        if (random.nextInt(4) == 0) {
          if (random.nextBoolean()) {
            pins.get(i).release();
          } else {
            pins.get(i).abandon();
          }
        } else {
          pins.remove(i);
          referencePins.remove(i);
        }
        pinsReleased++;
      } else if (kind < 75) {
        int[] prompt = nextPrompt(random, page, systemPrompts, sessions, recent);
        BackendId id = backends.get(random.nextInt(backends.size()));
        long before = reference.sizeTokens(id);
        if (random.nextBoolean()) {
          // as the router does: one prepared prompt, matched (hashing part of it), then inserted
          PrefixIndex.Prompt prepared = index.prompt(prompt);
          assertThat(index.match(prepared).matchedTokens())
              .as("op %d, prepared prompt", op)
              .isEqualTo(reference.match(prompt).matchedTokens());
          if (random.nextInt(4) == 0) {
            // another request's insert between this one's match and insert, as with several event
            // loops: the nodes the match found may have moved (the insert must not trust them)
            int[] other = nextPrompt(random, page, systemPrompts, sessions, recent);
            BackendId otherId = backends.get(random.nextInt(backends.size()));
            index.insert(otherId, other);
            reference.insert(otherId, other);
          }
          if (random.nextInt(3) == 0 && pins.size() < maxPins) {
            pins.add(index.insertAndPin(id, prepared));
            referencePins.add(reference.insertAndPin(id, prompt, true));
          } else {
            index.insert(id, prepared);
            reference.insert(id, prompt);
          }
        } else {
          index.insert(id, prompt);
          reference.insert(id, prompt);
        }
        inserts++;
        if (reference.sizeTokens(id) < before + (long) (prompt.length / page) * page) {
          evictionsSeen++;
        }
      }
      // Compare a match after every operation: a recent prompt, an extension of one, or a new one.
      int[] probe = probe(random, page, recent, systemPrompts, sessions);
      PrefixMatch match = index.match(probe);
      assertThat(match.promptTokens()).isEqualTo(probe.length);
      assertThat(match.matchedTokens())
          .as("op %d, probe of %d tokens", op, probe.length)
          .isEqualTo(reference.match(probe).matchedTokens());
      for (BackendId id : reference.backends()) {
        assertThat(index.sizeTokens(id)).as("size of %s at op %d", id, op)
            .isEqualTo(reference.sizeTokens(id));
      }
      assertThat(index.nodeCount()).isEqualTo(reference.distinctPages());
      long pinnedPages = 0;
      for (BackendId id : reference.backends()) {
        pinnedPages += reference.pinnedPages(id);
        assertThat(index.sizeTokens(id)).as("%s at most twice its capacity unless pinned", id)
            .isLessThanOrEqualTo(page * Math.max(2 * reference.capacityPages(id), reference.pinnedPages(id)));
      }
      assertThat((long) index.nodeCount())
          .isLessThanOrEqualTo(reference.totalCapacityPages() + pinnedPages);
    }
    assertThat(inserts).isGreaterThan(operations / 2);
    assertThat(evictionsSeen).as("the workload must exercise eviction").isGreaterThan(50);
    assertThat(pinsReleased).as("the workload must exercise pins").isGreaterThan(20);
    assertThat(pinsAbandoned).as("the workload must exercise abandoned pins").isGreaterThan(5);
    assertThat(pinsConfirmed).as("the workload must exercise confirmed pins").isGreaterThan(5);
    if (maxPins > 12) {
      assertThat(reference.limitStops())
          .as("the workload must pin views up to twice their capacity").isGreaterThan(5);
    }
  }

  private static long randomCapacity(SplittableRandom random, int page) {
    return random.nextInt(10) == 0 ? random.nextInt(page) : random.nextInt(40 * page);
  }

  private static int[] randomTokens(SplittableRandom random, int length, int vocabulary) {
    int[] tokens = new int[length];
    for (int i = 0; i < length; i++) {
      tokens[i] = random.nextInt(vocabulary);
    }
    return tokens;
  }

  private static int[] concat(int[] a, int[] b) {
    int[] both = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, both, a.length, b.length);
    return both;
  }

  private static int[] nextPrompt(SplittableRandom random, int page, List<int[]> systemPrompts,
      List<int[]> sessions, List<int[]> recent) {
    int kind = random.nextInt(10);
    int[] prompt;
    if (kind < 6 && !sessions.isEmpty()) { // next turn of a session: its history plus a new turn
      int s = random.nextInt(sessions.size());
      prompt = concat(sessions.get(s), randomTokens(random, 1 + random.nextInt(3 * page), 50));
      if (prompt.length > 30 * page) {
        prompt = concat(systemPrompts.get(random.nextInt(systemPrompts.size())),
            randomTokens(random, random.nextInt(2 * page), 50));
      }
      sessions.set(s, prompt);
    } else if (kind < 8 || sessions.isEmpty()) { // a new session
      prompt = concat(systemPrompts.get(random.nextInt(systemPrompts.size())),
          randomTokens(random, random.nextInt(3 * page), 50));
      if (sessions.size() < 12) {
        sessions.add(prompt);
      } else {
        sessions.set(random.nextInt(sessions.size()), prompt);
      }
    } else { // a short prompt over a two-token vocabulary: pages collide in content, not in chain
      prompt = randomTokens(random, random.nextInt(6 * page), 2);
    }
    recent.add(prompt);
    if (recent.size() > 40) {
      recent.remove(0);
    }
    return prompt;
  }

  private static int[] probe(SplittableRandom random, int page, List<int[]> recent,
      List<int[]> systemPrompts, List<int[]> sessions) {
    if (recent.isEmpty() || random.nextInt(5) == 0) {
      return random.nextBoolean()
          ? randomTokens(random, random.nextInt(6 * page), 2)
          : systemPrompts.get(random.nextInt(systemPrompts.size()));
    }
    int[] base = recent.get(random.nextInt(recent.size()));
    switch (random.nextInt(3)) {
      case 0:
        return base;
      case 1:
        return Arrays.copyOf(base, random.nextInt(base.length + 1));
      default:
        return concat(base, randomTokens(random, random.nextInt(2 * page), 50));
    }
  }
}
