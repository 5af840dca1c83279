package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.RouterCore;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.policy.Decision;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link OffLoopRouting}'s record of a prompt routed ahead of its encoding: whether the workers are
 * busy, the record on a worker or here when they refuse it, and a record still queued when the
 * router closes giving the body it holds back without recording.
 */
class OffLoopRoutingTest {
  private static ProxyContext with(ThreadPoolExecutor workers) {
    return new ProxyContext(null, null, null, null, null, null, null, null, workers, null, null, null, null, null, null);
  }

  /** A routed-ahead request that counts its records. */
  private static RouterCore.RoutedAhead counting(AtomicInteger records) {
    return new RouterCore.RoutedAhead() {
      @Override
      public void record() {
        records.incrementAndGet();
      }

      @Override
      public Decision decision() {
        throw new UnsupportedOperationException();
      }

      @Override
      public int[] promptTokens() {
        return new int[0];
      }

      @Override
      public int predictedCachedTokens() {
        return 0;
      }

      @Override
      public Lease lease() {
        throw new UnsupportedOperationException();
      }
    };
  }

  @Test
  void aRecordQueuedWhenTheRouterClosesGivesItsBodyBackUnrecorded() throws Exception {
    ThreadPoolExecutor workers = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(4));
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch started = new CountDownLatch(1);
    ProxyContext px = with(workers);
    assertThat(OffLoopRouting.encodingWaits(px)).isFalse();
    workers.execute(() -> {
      started.countDown();
      try {
        release.await(10, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    assertThat(started.await(5, TimeUnit.SECONDS)).isTrue();
    assertThat(OffLoopRouting.encodingWaits(px)).as("the one worker is busy").isTrue();

    AtomicInteger records = new AtomicInteger();
    AtomicInteger released = new AtomicInteger();
    OffLoopRouting.record(px, counting(records), released::incrementAndGet);
    assertThat(released.get()).as("queued, not run here").isZero();

    List<Runnable> queued = workers.shutdownNow();
    assertThat(queued).hasSize(1).allMatch(r -> r instanceof OffLoopRouting.Droppable);
    ((OffLoopRouting.Droppable) queued.get(0)).dropped();
    assertThat(released.get()).isEqualTo(1);
    assertThat(records.get()).isZero();
    assertThat(workers.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
  }

  @Test
  void aRecordTheWorkersRefuseRunsHereAndARecordTheyTakeRunsThere() throws Exception {
    ThreadPoolExecutor workers = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1));
    AtomicInteger records = new AtomicInteger();
    AtomicInteger released = new AtomicInteger();
    CountDownLatch done = new CountDownLatch(1);
    OffLoopRouting.record(with(workers), counting(records), () -> {
      released.incrementAndGet();
      done.countDown();
    });
    assertThat(done.await(5, TimeUnit.SECONDS)).isTrue();
    assertThat(records.get()).isEqualTo(1);
    assertThat(released.get()).isEqualTo(1);

    workers.shutdown(); // refuses every task from now on
    OffLoopRouting.record(with(workers), counting(records), released::incrementAndGet);
    assertThat(records.get()).as("recorded on the calling thread").isEqualTo(2);
    assertThat(released.get()).isEqualTo(2);
  }
}
