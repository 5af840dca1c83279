package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.kvevents.KvEvent;
import dev.kvroute.core.kvevents.KvEventBatch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class EventPrefixIndexTest {
  private static final int PAGE = 16;
  private static final BackendId A = BackendId.of("a");
  private static final BackendId B = BackendId.of("b");

  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private final Ticker ticker = now::get;
  private final List<String> modeChanges = new ArrayList<>();
  private final KvEventIndex index = KvEventIndex.create(PrefixIndex.radix(PAGE, ticker), ticker,
      new KvEventIndex.Settings(Duration.ofSeconds(2), Duration.ofSeconds(30)));
  private final SplittableRandom random = new SplittableRandom(7);

  EventPrefixIndexTest() {
    index.onModeChange((b, m, why) -> modeChanges.add(b + " " + m + ": " + why));
    index.addBackend(A, 100_000);
    index.addBackend(B, 100_000);
    index.enableEvents(A);
    index.enableEvents(B);
  }

  @AfterEach
  void invariants() {
    index.checkInvariants();
  }

  private int[] tokens(int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = random.nextInt(100_000);
    }
    return t;
  }

  /** An engine that names its blocks with its own random hashes (whatever algorithm and seed). */
  private final class Engine {
    final int blockSize;
    final List<Long> hashes = new ArrayList<>();
    final SplittableRandom engineRandom = new SplittableRandom(99);

    Engine(int blockSize) {
      this.blockSize = blockSize;
    }

    /** A BlockStored for {@code tokens}' whole blocks from block {@code from} on. */
    KvEvent.BlockStored store(int[] tokens, int from, OptionalLong parent) {
      int n = tokens.length / blockSize - from;
      long[] h = new long[n];
      for (int i = 0; i < n; i++) {
        h[i] = engineRandom.nextLong();
        hashes.add(h[i]);
      }
      int[] t = Arrays.copyOfRange(tokens, from * blockSize, (from + n) * blockSize);
      return KvEvent.BlockStored.gpu(h, parent, t, blockSize);
    }
  }

  private void apply(BackendId b, KvEvent... events) {
    index.apply(b, new KvEventBatch(1.0, List.of(events), 0), 2_000_000_000L);
  }

  @Test
  void matchesWhatTheEngineReportsWhateverItsHashes() {
    int[] prompt = tokens(100); // 6 whole pages
    Engine engine = new Engine(PAGE);
    apply(A, engine.store(prompt, 0, OptionalLong.empty()));
    PrefixMatch m = index.match(prompt);
    assertThat(m.matched(A)).isEqualTo(96);
    assertThat(m.matched(B)).isZero();
    // a longer prompt sharing 3 pages matches 3 pages
    int[] other = prompt.clone();
    other[50] ^= 1;
    assertThat(index.match(other).matched(A)).isEqualTo(48);
    assertThat(index.stats(A).blocks()).isEqualTo(6);
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.PRECISE);
  }

  @Test
  void aChildEventChainsFromItsParentsPages() {
    int[] prompt = tokens(64);
    Engine engine = new Engine(PAGE);
    apply(A, engine.store(Arrays.copyOf(prompt, 32), 0, OptionalLong.empty()));
    apply(A, engine.store(prompt, 2, OptionalLong.of(engine.hashes.get(1))));
    assertThat(index.match(prompt).matched(A)).isEqualTo(64);
  }

  @Test
  void anUnseenParentKeepsTheBlocksButMatchesNothingBelowIt() {
    int[] prompt = tokens(64);
    Engine engine = new Engine(PAGE);
    KvEvent.BlockStored orphan = engine.store(prompt, 2, OptionalLong.of(12345L));
    apply(A, orphan);
    assertThat(index.stats(A).blocks()).isEqualTo(2);
    assertThat(index.stats(A).orphanBlocks()).isEqualTo(2);
    assertThat(index.stats(A).dropped()).isZero();
    assertThat(index.match(prompt).matched(A)).isZero();
    // its children chain on, and its removal is tracked
    int[] longer = Arrays.copyOf(prompt, 80);
    apply(A, engine.store(longer, 4, OptionalLong.of(engine.hashes.get(1))));
    assertThat(index.stats(A).blocks()).isEqualTo(3);
    apply(A, KvEvent.BlockRemoved.gpu(engine.hashes.get(0), engine.hashes.get(1), engine.hashes.get(2)));
    assertThat(index.stats(A).blocks()).isZero();
  }

  @Test
  void removedBlocksStopMatchingTailFirst() {
    int[] prompt = tokens(64);
    Engine engine = new Engine(PAGE);
    apply(A, engine.store(prompt, 0, OptionalLong.empty()));
    apply(A, KvEvent.BlockRemoved.gpu(engine.hashes.get(3)));
    assertThat(index.match(prompt).matched(A)).isEqualTo(48);
    apply(A, KvEvent.BlockRemoved.gpu(engine.hashes.get(1)));
    assertThat(index.match(prompt).matched(A)).isEqualTo(16);
  }

  @Test
  void allBlocksClearedEmptiesTheView() {
    int[] prompt = tokens(64);
    apply(A, new Engine(PAGE).store(prompt, 0, OptionalLong.empty()));
    apply(A, new KvEvent.AllBlocksCleared());
    assertThat(index.match(prompt).matched(A)).isZero();
    assertThat(index.stats(A).blocks()).isZero();
    assertThat(index.stats(A).clears()).isEqualTo(1);
  }

  @Test
  void anEngineRestartForgetsThePreciseView() {
    int[] prompt = tokens(64);
    apply(A, new Engine(PAGE).store(prompt, 0, OptionalLong.empty()));
    index.forget(A);
    assertThat(index.match(prompt).matched(A)).isZero();
  }

  @Test
  void engineBlocksLargerThanPagesMapToSeveralPages() {
    int[] prompt = tokens(130);
    Engine engine = new Engine(64);
    apply(A, engine.store(prompt, 0, OptionalLong.empty()));
    assertThat(index.match(prompt).matched(A)).isEqualTo(128);
    apply(A, KvEvent.BlockRemoved.gpu(engine.hashes.get(1)));
    assertThat(index.match(prompt).matched(A)).isEqualTo(64);
  }

  @Test
  void blocksSmallerThanAPageMakeTheBackendApproximate() {
    int[] prompt = tokens(64);
    index.insert(A, prompt); // the approximate view holds it
    apply(A, new Engine(8).store(prompt, 0, OptionalLong.empty()));
    assertThat(index.stats(A).dropped()).isEqualTo(1);
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.APPROXIMATE);
    assertThat(index.match(prompt).matched(A)).isEqualTo(64); // from the approximate view
    assertThat(modeChanges).last().asString().contains("block size 8");
  }

  @Test
  void otherTiersAndGroupsAreIgnored() {
    int[] prompt = tokens(32);
    apply(A, new KvEvent.BlockStored(new long[] {1, 2}, OptionalLong.empty(), prompt, PAGE, "CPU", null, -1),
        new KvEvent.BlockStored(new long[] {3, 4}, OptionalLong.empty(), prompt, PAGE, "GPU", null, 1));
    assertThat(index.stats(A).ignored()).isEqualTo(2);
    assertThat(index.match(prompt).matched(A)).isZero();
  }

  @Test
  void aLoraBlockDoesNotMatchTheBaseModelsPrompt() {
    int[] prompt = tokens(32);
    apply(A, new KvEvent.BlockStored(new long[] {1, 2}, OptionalLong.empty(), prompt, PAGE, "GPU", "sql", -1));
    assertThat(index.stats(A).blocks()).isEqualTo(2);
    assertThat(index.match(prompt).matched(A)).isZero();
  }

  @Test
  void aRoutedPromptIsSpeculativelyHeldUntilItsTtlExpires() {
    apply(A, new Engine(PAGE).store(tokens(16), 0, OptionalLong.empty())); // A's events have come
    int[] prompt = tokens(64);
    index.insert(A, prompt);
    assertThat(index.match(prompt).matched(A)).isEqualTo(64);
    assertThat(index.match(prompt).matched(B)).isZero();
    now.addAndGet(Duration.ofMillis(1999).toNanos());
    assertThat(index.match(prompt).matched(A)).isEqualTo(64);
    now.addAndGet(Duration.ofMillis(2).toNanos());
    assertThat(index.match(prompt).matched(A)).isZero(); // the engine never confirmed it
    index.insert(A, tokens(16)); // the next insert purges the expired entries
    assertThat(index.stats(A).speculativePages()).isEqualTo(1);
  }

  @Test
  void eventsThatStopWhileRoutedToFallBackToTheApproximateViewAndReturn() {
    int[] prompt = tokens(64);
    Engine engine = new Engine(PAGE);
    apply(A, engine.store(prompt, 0, OptionalLong.empty()));
    int[] routed = tokens(48);
    index.insert(A, routed); // approximate holds it; the engine never reports it
    now.addAndGet(Duration.ofSeconds(29).toNanos());
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.PRECISE);
    now.addAndGet(Duration.ofSeconds(2).toNanos());
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.APPROXIMATE);
    assertThat(index.match(routed).matched(A)).isEqualTo(48);
    assertThat(index.match(prompt).matched(A)).isZero(); // never routed: the approximate view lacks it
    assertThat(modeChanges).filteredOn(s -> s.contains("events stopped")).hasSize(1);
    index.mode(A);
    assertThat(modeChanges).filteredOn(s -> s.contains("events stopped")).hasSize(1); // one line
    apply(A, KvEvent.BlockRemoved.gpu(engine.hashes.get(3)));
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.PRECISE);
    assertThat(index.match(prompt).matched(A)).isEqualTo(48);
    assertThat(modeChanges).last().asString().isEqualTo("a PRECISE: events resumed");
  }

  @Test
  void anIdleBackendWithoutEventsStaysPrecise() {
    apply(A, new Engine(PAGE).store(tokens(32), 0, OptionalLong.empty()));
    now.addAndGet(Duration.ofMinutes(10).toNanos());
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.PRECISE);
  }

  @Test
  void untilItsFirstEventABackendIsMatchedFromTheApproximateView() {
    int[] routed = tokens(48);
    index.insert(A, routed);
    now.addAndGet(Duration.ofSeconds(5).toNanos()); // past the speculative TTL
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.APPROXIMATE);
    assertThat(index.match(routed).matched(A)).isEqualTo(48);
    assertThat(modeChanges).isEmpty(); // nothing to report: events may simply not have come yet
    apply(A, new Engine(PAGE).store(routed, 0, OptionalLong.empty()));
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.PRECISE);
    assertThat(modeChanges).containsExactly("a PRECISE: events arriving");
  }

  @Test
  void eventsThatNeverComeWhileRoutedToAreReportedOnce() {
    int[] routed = tokens(48);
    index.insert(A, routed);
    now.addAndGet(Duration.ofSeconds(31).toNanos());
    assertThat(index.mode(A)).isEqualTo(KvEventIndex.Mode.APPROXIMATE);
    index.mode(A);
    assertThat(modeChanges).singleElement().asString()
        .startsWith("a APPROXIMATE: no KV event since subscribing, 30 s after a request was routed to it");
    assertThat(index.match(routed).matched(A)).isEqualTo(48);
  }

  @Test
  void aBackendWithoutEventsUsesTheApproximateView() {
    BackendId c = BackendId.of("c");
    index.addBackend(c, 100_000);
    int[] prompt = tokens(64);
    index.insert(c, prompt);
    assertThat(index.mode(c)).isEqualTo(KvEventIndex.Mode.APPROXIMATE);
    assertThat(index.match(prompt).matched(c)).isEqualTo(64);
    now.addAndGet(Duration.ofMinutes(1).toNanos());
    assertThat(index.match(prompt).matched(c)).isEqualTo(64);
  }

  @Test
  void replayedStoresAreIdempotent() {
    int[] prompt = tokens(64);
    KvEvent.BlockStored s = new Engine(PAGE).store(prompt, 0, OptionalLong.empty());
    apply(A, s);
    apply(A, s);
    assertThat(index.stats(A).blocks()).isEqualTo(4);
    apply(A, KvEvent.BlockRemoved.gpu(s.blockHashes()));
    assertThat(index.match(prompt).matched(A)).isZero();
  }

  @Test
  void removingTheBackendDropsItsView() {
    apply(A, new Engine(PAGE).store(tokens(32), 0, OptionalLong.empty()));
    index.removeBackend(A);
    assertThat(index.stats(A)).isNull();
    assertThat(index.apply(A, new KvEventBatch(1, List.of(new KvEvent.AllBlocksCleared()), 0), 0).dropped())
        .isEqualTo(1);
  }

  /**
   * Regression: the view's write lock was held for a whole batch, so a routing call for one backend
   * waited until every event of a big step (several ~14K-token prompts' blocks) was applied. The
   * batch here pauses after its first event; routing must go on meanwhile and see that event.
   */
  @Test
  void routingDoesNotWaitForTheRestOfABatchBeingApplied() throws Exception {
    int[] first = tokens(960);
    int[] second = tokens(960);
    Engine engine = new Engine(PAGE);
    KvEvent.BlockStored one = engine.store(first, 0, OptionalLong.empty());
    KvEvent.BlockStored two = engine.store(second, 0, OptionalLong.empty());
    CountDownLatch firstApplied = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger events = new AtomicInteger();
    ((EventPrefixIndex) index).afterEachEvent(() -> {
      if (events.incrementAndGet() == 1) {
        firstApplied.countDown();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    });
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<?> applying = pool.submit(() -> apply(A, one, two));
      assertThat(firstApplied.await(30, TimeUnit.SECONDS)).as("the batch's first event applied").isTrue();
      Future<PrefixMatch> routing = pool.submit(() -> index.match(first));
      // a deadlock check, not a timing bound: with the batch-wide lock this never completes until release
      assertThat(routing).succeedsWithin(Duration.ofSeconds(30))
          .satisfies(m -> assertThat(m.matched(A)).isEqualTo(960));
      release.countDown();
      applying.get(30, TimeUnit.SECONDS);
      assertThat(index.match(second).matched(A)).isEqualTo(960);
    } finally {
      release.countDown();
      pool.shutdownNow();
    }
  }
}
