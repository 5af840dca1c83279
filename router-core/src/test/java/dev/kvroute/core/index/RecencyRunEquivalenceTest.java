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
 * Holds {@link RadixPrefixIndex}'s walk (runs of pages already adjacent in a view's recency list moved
 * at once, and a prompt's path nodes taken from its match or pinning walk) to the page-by-page walk it
 * replaced ({@code perPage}): the same seeded operations on both (multi-turn sessions, inserts with
 * and without pins, matches followed by inserts or not, pins confirmed, released with and without the
 * engine's cached-token report, abandoned, capacity changes, forgotten and removed backends), and after
 * every one each view's whole state must be equal: its pages in eviction order with their last-use
 * times and pin counts, and its unlisted pinned pages. So both evict the same pages in the same
 * order, whatever comes next.
 */
class RecencyRunEquivalenceTest {

  @ParameterizedTest(name = "seed {0}, page {1}, up to {2} backends, {3} ops")
  @CsvSource({
    "1, 4, 3, 3000",
    "2, 1, 4, 3000",
    "3, 16, 2, 3000",
    "4, 2, 6, 3000",
    "5, 8, 3, 3000",
  })
  void evictsExactlyAsThePageByPageWalk(long seed, int page, int maxBackends, int operations) {
    SplittableRandom random = new SplittableRandom(seed);
    AtomicLong clock = new AtomicLong();
    RadixPrefixIndex runs = new RadixPrefixIndex(page, clock::get);
    RadixPrefixIndex perPage = new RadixPrefixIndex(page, clock::get, true);
    List<BackendId> backends = new ArrayList<>();
    List<int[]> sessions = new ArrayList<>();
    List<PrefixIndex.Pin[]> pins = new ArrayList<>();
    // prompts matched earlier and inserted later (after other operations changed the tree)
    List<PrefixIndex.Prompt[]> matched = new ArrayList<>();
    int nextBackend = 0;
    int corrections = 0;

    for (int op = 0; op < operations; op++) {
      clock.addAndGet(random.nextInt(3)); // may stand still: the index makes its times increase
      int kind = random.nextInt(100);
      if (backends.isEmpty() || (kind < 3 && backends.size() < maxBackends)) {
        BackendId id = BackendId.of("b" + nextBackend++);
        long capacity = capacity(random, page);
        runs.addBackend(id, capacity);
        perPage.addBackend(id, capacity);
        backends.add(id);
      } else if (kind < 6) { // a new capacity: trims, and may renumber the view's entries
        BackendId id = backends.get(random.nextInt(backends.size()));
        long capacity = capacity(random, page);
        runs.addBackend(id, capacity);
        perPage.addBackend(id, capacity);
      } else if (kind < 7) {
        BackendId id = backends.get(random.nextInt(backends.size()));
        if (random.nextBoolean() && backends.size() > 1) {
          runs.removeBackend(id);
          perPage.removeBackend(id);
          backends.remove(id);
        } else {
          runs.forget(id);
          perPage.forget(id);
        }
      } else if (kind < 12 && !pins.isEmpty()) {
        PrefixIndex.Pin[] pin = pins.get(random.nextInt(pins.size()));
        pin[0].confirm();
        pin[1].confirm();
      } else if (kind < 30 && !pins.isEmpty()) {
        PrefixIndex.Pin[] pin = pins.remove(random.nextInt(pins.size()));
        int how = random.nextInt(4);
        if (how == 0) {
          pin[0].abandon();
          pin[1].abandon();
        } else if (how == 1) {
          pin[0].release();
          pin[1].release();
        } else {
          // the engine's report: often less than the view believed, so the view is corrected
          int cached = random.nextBoolean() ? 0 : random.nextInt(40 * page);
          pin[0].release(cached);
          pin[1].release(cached);
          corrections++;
        }
      } else if (kind < 36 && !matched.isEmpty()) {
        PrefixIndex.Prompt[] prompt = matched.remove(random.nextInt(matched.size()));
        BackendId id = backends.get(random.nextInt(backends.size()));
        pins.add(new PrefixIndex.Pin[] {runs.insertAndPin(id, prompt[0]), perPage.insertAndPin(id, prompt[1])});
      } else {
        int[] tokens = nextPrompt(random, page, sessions);
        PrefixIndex.Prompt[] prompt = {runs.prompt(tokens), perPage.prompt(tokens)};
        assertThat(runs.match(prompt[0]).matchedTokens()).as("op %d", op)
            .isEqualTo(perPage.match(prompt[1]).matchedTokens());
        if (random.nextInt(8) == 0) {
          matched.add(prompt);
          if (matched.size() > 8) {
            matched.remove(0);
          }
          continue;
        }
        BackendId id = backends.get(random.nextInt(backends.size()));
        if (random.nextInt(3) == 0) {
          runs.insert(id, prompt[0]);
          perPage.insert(id, prompt[1]);
        } else if (pins.size() < 8) {
          pins.add(new PrefixIndex.Pin[] {runs.insertAndPin(id, prompt[0]), perPage.insertAndPin(id, prompt[1])});
        }
        if (random.nextInt(6) == 0) { // the same prompt on a second backend
          BackendId other = backends.get(random.nextInt(backends.size()));
          runs.insert(other, prompt[0]);
          perPage.insert(other, prompt[1]);
        }
      }
      if (op % 16 == 0) {
        runs.checkInvariants();
      }
      for (BackendId id : backends) {
        assertThat(runs.recencyState(id)).as("%s after op %d", id, op)
            .isEqualTo(perPage.recencyState(id));
      }
      assertThat(runs.nodeCount()).isEqualTo(perPage.nodeCount());
      assertThat(runs.correctedPages()).isEqualTo(perPage.correctedPages());
    }
    assertThat(runs.runMoves()).as("runs of pages moved at once").isGreaterThan(20);
    assertThat(runs.correctedPages()).as("pages evicted by engine reports").isGreaterThan(0);
    assertThat(corrections).isGreaterThan(50);
  }

  private static long capacity(SplittableRandom random, int page) {
    return random.nextInt(8) == 0 ? random.nextInt(4 * page) : (8 + random.nextInt(60)) * (long) page;
  }

  /** A session's next turn (its history plus a few pages), a new session, or a short prompt. */
  private static int[] nextPrompt(SplittableRandom random, int page, List<int[]> sessions) {
    int kind = random.nextInt(10);
    if (kind < 7 && !sessions.isEmpty()) {
      int s = random.nextInt(sessions.size());
      int[] history = sessions.get(s);
      int[] prompt = Arrays.copyOf(history, history.length + 1 + random.nextInt(3 * page));
      for (int i = history.length; i < prompt.length; i++) {
        prompt[i] = random.nextInt(50);
      }
      if (prompt.length > 40 * page) {
        prompt = Arrays.copyOf(prompt, random.nextInt(4 * page)); // the session starts over
      }
      sessions.set(s, prompt);
      return prompt;
    }
    int[] prompt = new int[random.nextInt(12 * page)];
    for (int i = 0; i < prompt.length; i++) {
      prompt[i] = i < page ? random.nextInt(2) : random.nextInt(50); // shared first pages now and then
    }
    if (kind < 9) {
      if (sessions.size() < 10) {
        sessions.add(prompt);
      } else {
        sessions.set(random.nextInt(sessions.size()), prompt);
      }
    }
    return prompt;
  }
}
