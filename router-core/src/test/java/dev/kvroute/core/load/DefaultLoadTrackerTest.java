package dev.kvroute.core.load;

import static org.assertj.core.api.Assertions.assertThat;

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
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(2, 500, 2, 0, -1, -1));
    assertThat(tracker.load(B)).isEqualTo(BackendLoad.IDLE);
  }

  @Test
  void firstTokenThenReleaseMovesThroughDecode() {
    Lease lease = tracker.acquire(A, 300);
    lease.firstToken();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 0, 0, 1, -1, -1));
    lease.firstToken(); // a second first token changes nothing
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 0, 0, 1, -1, -1));
    assertThat(lease.release()).isTrue();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0, -1, -1));
  }

  @Test
  void releaseWithoutFirstTokenClearsPrefillToo() {
    Lease lease = tracker.acquire(A, 300);
    Lease other = tracker.acquire(A, 50);
    assertThat(lease.release()).isTrue();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 50, 1, 0, -1, -1));
    lease.firstToken(); // after release: ignored
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 50, 1, 0, -1, -1));
    other.release();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0, -1, -1));
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
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0, -1, -1));
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
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0, -1, -1));
    assertThat(tracker.load(B)).isEqualTo(new BackendLoad(0, 0, 0, 0, -1, -1));
  }

  @Test
  void externalLoadIsReported() {
    tracker.reportExternal(A, 4, 0.75);
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(0, 0, 0, 0, 4, 0.75));
    Lease l = tracker.acquire(A, 1);
    assertThat(tracker.load(A).externalQueueLength()).isEqualTo(4);
    l.release();
  }

  @Test
  void removedBackendForgetsLoadAndLiveLeasesStillReleaseSafely() {
    Lease live = tracker.acquire(A, 100);
    tracker.remove(A);
    assertThat(tracker.load(A)).isEqualTo(BackendLoad.IDLE);
    Lease fresh = tracker.acquire(A, 5);
    assertThat(live.release()).isTrue();
    assertThat(tracker.load(A)).isEqualTo(new BackendLoad(1, 5, 1, 0, -1, -1));
    fresh.release();
  }
}
