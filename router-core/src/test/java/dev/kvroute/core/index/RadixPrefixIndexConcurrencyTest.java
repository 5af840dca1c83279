package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Several threads match and insert shared-prefix prompts while another adds and removes a backend;
 * afterwards the index must be consistent and every match seen must have been well formed.
 */
class RadixPrefixIndexConcurrencyTest {
  private static final int PAGE = 16;

  @Test
  void concurrentMatchInsertAndMembershipChangesKeepTheIndexConsistent() throws Exception {
    AtomicLong clock = new AtomicLong();
    PrefixIndex index = PrefixIndex.radix(PAGE, clock::incrementAndGet);
    List<BackendId> stable = new ArrayList<>();
    for (int b = 0; b < 8; b++) {
      stable.add(BackendId.of("engine-" + b));
      index.addBackend(stable.get(b), 300 * PAGE);
    }
    BackendId churning = BackendId.of("churning");
    int[] system = new int[40 * PAGE];
    Arrays.setAll(system, i -> i);

    ExecutorService pool = Executors.newFixedThreadPool(5);
    CountDownLatch start = new CountDownLatch(1);
    try {
      List<Future<Integer>> workers = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        long seed = t;
        workers.add(pool.submit(worker(index, stable, system, start, seed)));
      }
      Future<Integer> churn = pool.submit(() -> {
        start.await();
        for (int round = 0; round < 300; round++) {
          index.addBackend(churning, (round % 7) * 50L * PAGE);
          index.insert(churning, Arrays.copyOf(system, (round % 40) * PAGE));
          if (round % 3 == 0) {
            index.removeBackend(churning);
          }
        }
        return 300;
      });
      start.countDown();
      int matches = 0;
      for (Future<Integer> worker : workers) {
        matches += worker.get(60, TimeUnit.SECONDS);
      }
      churn.get(60, TimeUnit.SECONDS);
      assertThat(matches).isEqualTo(4 * 1500);
    } finally {
      pool.shutdownNow();
    }

    index.checkInvariants();
    long total = 0;
    for (BackendId id : stable) {
      assertThat(index.sizeTokens(id)).isBetween(0L, 300L * PAGE);
      total += index.sizeTokens(id);
    }
    assertThat(total).isGreaterThan(8 * 100L * PAGE);
    index.insert(stable.get(0), system);
    assertThat(index.match(system).matched(stable.get(0))).isEqualTo(system.length);
  }

  private static Callable<Integer> worker(PrefixIndex index, List<BackendId> backends, int[] system,
      CountDownLatch start, long seed) {
    return () -> {
      SplittableRandom random = new SplittableRandom(seed);
      int[] history = system;
      start.await();
      int matches = 0;
      for (int op = 0; op < 1500; op++) {
        int[] turn = new int[1 + random.nextInt(4 * PAGE)];
        for (int i = 0; i < turn.length; i++) {
          turn[i] = 100_000 + random.nextInt(1000);
        }
        history = history.length > 150 * PAGE ? system : concat(history, turn);
        PrefixMatch match = index.match(history);
        matches++;
        BackendId best = backends.get(random.nextInt(backends.size()));
        for (BackendId id : match.matchedTokens().keySet()) {
          int matched = match.matched(id);
          assertThat(matched % PAGE).isZero();
          assertThat(matched).isBetween(0, history.length);
          if (backends.contains(id) && matched > match.matched(best)) {
            best = id;
          }
        }
        assertThat(match.matchedTokens().keySet()).containsAll(backends);
        index.insert(random.nextBoolean() ? best : backends.get(random.nextInt(backends.size())),
            history);
      }
      return matches;
    };
  }

  private static int[] concat(int[] a, int[] b) {
    int[] both = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, both, a.length, b.length);
    return both;
  }
}
