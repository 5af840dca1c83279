package dev.kvroute.core.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.BackendId;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class DefaultLoadTrackerTest {
  private static final BackendId A = BackendId.of("a");
  private static final BackendId B = BackendId.of("b");

  private final LoadTracker tracker = LoadTracker.create();

  @Test
  void unknownBackendIsIdle() {
    assertThat(tracker.load(A)).isEqualTo(BackendLoad.IDLE);
  }

  @Test
  void acquireCountsAPrefillingRequest() {
    tracker.acquire(A, 300);
    tracker.acquire(A, 200);
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(2, 500, 2, 0));
    assertThat(tracker.load(B)).isEqualTo(BackendLoad.IDLE);
  }

  @Test
  void firstTokenThenReleaseMovesThroughDecode() {
    Lease lease = tracker.acquire(A, 300);
    lease.firstToken();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 0, 0, 1));
    lease.firstToken(); // a second first token changes nothing
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 0, 0, 1));
    assertThat(lease.release()).isTrue();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0));
  }

  @Test
  void releaseWithoutFirstTokenClearsPrefillToo() {
    Lease lease = tracker.acquire(A, 300);
    Lease other = tracker.acquire(A, 50);
    assertThat(lease.release()).isTrue();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 50, 1, 0));
    lease.firstToken(); // after release: ignored
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 50, 1, 0));
    other.release();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0));
  }

  @Test
  void releaseIsIdempotent() {
    Lease lease = tracker.acquire(A, 10);
    assertThat(lease.release()).isTrue();
    assertThat(lease.release()).isFalse();
    assertThat(lease.release()).isFalse();
    assertThat(tracker.load(A).inFlightRequests()).isZero();
  }

  @Test
  void leaseIsReleasedExactlyOnceUnderConcurrency() throws Exception {
    int leases = 2000;
    int threads = 4;
    List<Lease> all = new ArrayList<>();
    for (int i = 0; i < leases; i++) {
      all.add(tracker.acquire(A, 7));
    }
    AtomicInteger released = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int me = t;
      done.add(
          pool.submit(
              () -> {
                start.await();
                for (int i = 0; i < leases; i++) {
                  Lease l = all.get(i);
                  // threads race firstToken against release on every lease
                  if ((i + me) % 2 == 0) {
                    l.firstToken();
                  }
                  if (l.release()) {
                    released.incrementAndGet();
                  }
                }
                return null;
              }));
    }
    start.countDown();
    for (Future<?> f : done) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(released.get()).isEqualTo(leases);
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0));
  }

  @Test
  void concurrentAcquireAndReleaseBalance() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    List<Future<?>> done = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      done.add(
          pool.submit(
              () -> {
                for (int i = 0; i < 5000; i++) {
                  Lease l = tracker.acquire(i % 2 == 0 ? A : B, i);
                  if (i % 3 == 0) {
                    l.firstToken();
                  }
                  l.release();
                }
                return null;
              }));
    }
    for (Future<?> f : done) {
      f.get(30, TimeUnit.SECONDS);
    }
    pool.shutdown();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0));
    assertThat(tracker.load(B)).isEqualTo(new BackendLoad(0, 0, 0, 0));
  }

  @Test
  void theEngineReportCountsOnlyWhatThisRouterDidNotSend() {
    Lease first = tracker.acquire(A, 100);
    Lease second = tracker.acquire(A, 100);
    second.firstToken();
    BackendLoad asked = tracker.load(A); // 2 in flight, 1 prefilling
    // the engine runs our 2 plus 3 foreign, and 4 wait, 1 of them ours
    tracker.reportEngine(A, new EngineLoad(4, 4, 0.5), asked);
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(2, 100, 1, 1, 6, 3, 0.5));
    assertThat(tracker.load(B)).isEqualTo(BackendLoad.IDLE);

    // own counts move at once; the foreign ones only with the next report
    first.release();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 0, 0, 1, 6, 3, 0.5));
    tracker.clearEngine(A);
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 0, 0, 1));
    second.release();
  }

  @Test
  void requestsThatEndOrStartDuringTheScrapeAreNotForeign() {
    Lease ended = tracker.acquire(A, 10);
    BackendLoad asked = tracker.load(A);
    ended.release(); // finished while the scrape was in flight; the engine still counted it
    tracker.reportEngine(A, new EngineLoad(1, 0, -1), asked);
    assertThat(tracker.load(A).foreignRequests()).isZero();

    BackendLoad idle = tracker.load(A);
    Lease started = tracker.acquire(A, 10); // routed while the scrape was in flight
    tracker.reportEngine(A, new EngineLoad(0, 1, -1), idle);
    assertThat(tracker.load(A).foreignRequests()).isZero();
    assertThat(tracker.load(A).foreignWaiting()).isZero();
    started.release();

    // an engine busier than this router's count by any margin is foreign load
    tracker.reportEngine(A, new EngineLoad(2, 5, 1.0), tracker.load(A));
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0, 7, 5, 1.0));
  }

  @Test
  void engineLoadRejectsImpossibleGauges() {
    assertThatThrownBy(() -> new EngineLoad(-1, 0, 0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new EngineLoad(0, 0, 1.5)).hasMessageContaining("kvUsage");
    assertThatThrownBy(() -> new EngineLoad(0, 0, Double.NaN)).hasMessageContaining("kvUsage");
  }

  @Test
  void removedBackendForgetsLoadAndLiveLeasesStillReleaseSafely() {
    Lease live = tracker.acquire(A, 100);
    tracker.remove(A);
    assertThat(tracker.load(A)).isEqualTo(BackendLoad.IDLE);
    Lease fresh = tracker.acquire(A, 5);
    assertThat(live.release()).isTrue();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 5, 1, 0));
    fresh.release();
  }
}
