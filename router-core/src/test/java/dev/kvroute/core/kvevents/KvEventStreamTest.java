package dev.kvroute.core.kvevents;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.core.index.PrefixIndex;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Recovery from lost, replayed and restarted event streams, through the decoder into the index. */
class KvEventStreamTest {
  private static final int PAGE = 16;
  private static final BackendId A = BackendId.of("a");

  private final AtomicLong now = new AtomicLong(1);
  private final Ticker ticker = now::get;
  private final KvEventIndex index =
      KvEventIndex.create(PrefixIndex.radix(PAGE, ticker), ticker, KvEventIndex.Settings.DEFAULT);

  /** A publisher: numbered batches and a replay buffer of the last {@code bufferSteps}. */
  private static final class Publisher implements KvEventStream.Replayer {
    final TreeMap<Long, byte[]> buffer = new TreeMap<>();
    final int bufferSteps;
    long next;
    long hash = 1000;
    boolean answers = true;
    final List<Long> asked = new ArrayList<>();

    Publisher(int bufferSteps) {
      this.bufferSteps = bufferSteps;
    }

    /** Publishes one batch storing {@code tokens}' blocks from {@code from}; returns its seq. */
    long store(int[] tokens, int from, KvEventEncoder.Layout layout) {
      int n = tokens.length / PAGE - from;
      long[] h = new long[n];
      for (int i = 0; i < n; i++) {
        h[i] = ++hash;
      }
      OptionalLong parent = from == 0 ? OptionalLong.empty() : OptionalLong.of(hash - n);
      return publish(new KvEventBatch(1.0, List.of(KvEvent.BlockStored.gpu(h, parent,
          Arrays.copyOfRange(tokens, from * PAGE, (from + n) * PAGE), PAGE)), 0), layout);
    }

    long publish(KvEventBatch batch, KvEventEncoder.Layout layout) {
      long seq = next++;
      buffer.put(seq, KvEventEncoder.encode(batch, layout));
      while (buffer.size() > bufferSteps) {
        buffer.pollFirstEntry();
      }
      return seq;
    }

    @Override
    public boolean replay(long fromSeq, Sink sink) {
      asked.add(fromSeq);
      if (!answers) {
        return false;
      }
      buffer.tailMap(fromSeq, true).forEach(sink::batch);
      return true;
    }
  }

  private static int[] prompt(int seed, int n) {
    int[] t = new int[n];
    for (int i = 0; i < n; i++) {
      t[i] = seed * 1000 + i;
    }
    return t;
  }

  private void deliver(KvEventStream stream, Publisher pub, long seq) {
    stream.onMessage(seq, pub.buffer.get(seq));
  }

  @Test
  void inOrderBatchesOfBothLayoutsApply() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    int[] p = prompt(1, 64);
    deliver(stream, pub, pub.store(Arrays.copyOf(p, 32), 0, KvEventEncoder.Layout.ARRAY_LIKE));
    deliver(stream, pub, pub.store(p, 2, KvEventEncoder.Layout.TAGGED_MAP));
    assertThat(index.match(p).matched(A)).isEqualTo(64);
    assertThat(stream.gaps()).isZero();
    assertThat(pub.asked).isEmpty();
  }

  @Test
  void aLostBatchIsReplayedFromTheLastAppliedNumber() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    int[] p = prompt(1, 64);
    int[] q = prompt(2, 32);
    deliver(stream, pub, pub.store(Arrays.copyOf(p, 32), 0, KvEventEncoder.Layout.TAGGED_MAP));
    long lost = pub.store(p, 2, KvEventEncoder.Layout.TAGGED_MAP); // never delivered live
    long third = pub.store(q, 0, KvEventEncoder.Layout.TAGGED_MAP);
    long fourth = pub.store(prompt(3, 16), 0, KvEventEncoder.Layout.TAGGED_MAP);
    deliver(stream, pub, third);
    assertThat(pub.asked).containsExactly(lost);
    assertThat(stream.gaps()).isEqualTo(1);
    assertThat(stream.missed()).isZero();
    assertThat(index.match(p).matched(A)).isEqualTo(64); // the lost child applied, chained to its parent
    assertThat(index.match(q).matched(A)).isEqualTo(32);
    assertThat(index.stats(A).clears()).isZero();
    deliver(stream, pub, fourth); // the replay already applied it: a duplicate, no new gap
    assertThat(stream.duplicates()).isEqualTo(2); // the live third and fourth both came in the replay
    assertThat(stream.gaps()).isEqualTo(1);
    assertThat(stream.lastSeq()).isEqualTo(fourth);
  }

  @Test
  void aGapWithoutReplayClearsAndRebuilds() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, null, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    int[] p = prompt(1, 64);
    int[] q = prompt(2, 32);
    deliver(stream, pub, pub.store(p, 0, KvEventEncoder.Layout.ARRAY_LIKE));
    pub.publish(new KvEventBatch(1, List.of(KvEvent.BlockRemoved.gpu(pub.hash)), 0),
        KvEventEncoder.Layout.ARRAY_LIKE); // lost: the router would keep crediting p's last block
    deliver(stream, pub, pub.store(q, 0, KvEventEncoder.Layout.ARRAY_LIKE));
    assertThat(stream.gaps()).isEqualTo(1);
    assertThat(stream.missed()).isEqualTo(1);
    assertThat(index.match(p).matched(A)).isZero(); // cleared: no stale credit
    assertThat(index.match(q).matched(A)).isEqualTo(32); // rebuilt from the next batch on
    assertThat(index.stats(A).clears()).isEqualTo(1);
  }

  @Test
  void aReplayBufferThatNoLongerReachesBackClears() {
    Publisher pub = new Publisher(1);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    int[] p = prompt(1, 64);
    deliver(stream, pub, pub.store(p, 0, KvEventEncoder.Layout.TAGGED_MAP));
    pub.store(prompt(2, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    long third = pub.store(prompt(3, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    deliver(stream, pub, third);
    assertThat(stream.missed()).isEqualTo(1);
    assertThat(index.match(p).matched(A)).isZero();
    assertThat(index.match(prompt(3, 32)).matched(A)).isEqualTo(32);
  }

  @Test
  void aReplaySocketThatDoesNotAnswerClears() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    deliver(stream, pub, pub.store(prompt(1, 32), 0, KvEventEncoder.Layout.TAGGED_MAP));
    pub.store(prompt(2, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    pub.answers = false;
    deliver(stream, pub, pub.store(prompt(3, 32), 0, KvEventEncoder.Layout.TAGGED_MAP));
    assertThat(stream.replayFailures()).isEqualTo(1);
    assertThat(index.match(prompt(1, 32)).matched(A)).isZero();
    assertThat(index.stats(A).clears()).isEqualTo(1);
  }

  @Test
  void aPublisherRestartClearsTheView() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, null, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    int[] p = prompt(1, 64);
    deliver(stream, pub, pub.store(p, 0, KvEventEncoder.Layout.TAGGED_MAP));
    deliver(stream, pub, pub.store(prompt(2, 32), 0, KvEventEncoder.Layout.TAGGED_MAP));
    Publisher restarted = new Publisher(100); // numbers from 0 again
    int[] q = prompt(3, 32);
    deliver(stream, restarted, restarted.store(q, 0, KvEventEncoder.Layout.TAGGED_MAP));
    assertThat(stream.restarts()).isEqualTo(1);
    assertThat(index.match(p).matched(A)).isZero();
    assertThat(index.match(q).matched(A)).isEqualTo(32);
  }

  @Test
  void aLateSubscriberReplaysWhatTheBufferHolds() {
    Publisher pub = new Publisher(100);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    int[] p = prompt(1, 64);
    pub.store(Arrays.copyOf(p, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    pub.store(p, 2, KvEventEncoder.Layout.TAGGED_MAP);
    long live = pub.store(prompt(2, 16), 0, KvEventEncoder.Layout.TAGGED_MAP);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    deliver(stream, pub, live);
    assertThat(pub.asked).containsExactly(0L);
    assertThat(index.match(p).matched(A)).isEqualTo(64);
    assertThat(stream.gaps()).isZero();
    assertThat(index.stats(A).clears()).isZero();
  }

  @Test
  void aRestartAfterALateSubscribersReplayIsARestart() {
    Publisher pub = new Publisher(100);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    int[] p = prompt(1, 32);
    pub.store(p, 0, KvEventEncoder.Layout.TAGGED_MAP);
    pub.store(prompt(2, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    long live = pub.store(prompt(3, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    deliver(stream, pub, live); // joined late: batches 0..live replayed
    assertThat(index.match(p).matched(A)).isEqualTo(32);
    Publisher restarted = new Publisher(100); // a new process numbers from 0 again
    int[] q = prompt(4, 32);
    deliver(stream, restarted, restarted.store(q, 0, KvEventEncoder.Layout.TAGGED_MAP));
    assertThat(stream.restarts()).isEqualTo(1);
    assertThat(stream.duplicates()).isEqualTo(1); // only the live batch that asked for the replay
    assertThat(index.match(p).matched(A)).isZero();
    assertThat(index.match(q).matched(A)).isEqualTo(32);
  }

  @Test
  void aReplaysDuplicatesEndWhenTheLiveSocketPassesThem() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    deliver(stream, pub, pub.store(prompt(1, 32), 0, KvEventEncoder.Layout.TAGGED_MAP));
    pub.store(prompt(2, 32), 0, KvEventEncoder.Layout.TAGGED_MAP); // lost in transit
    long third = pub.store(prompt(3, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    long fourth = pub.store(prompt(4, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    deliver(stream, pub, third); // the replay applies the lost one, third and fourth
    deliver(stream, pub, fourth); // published while the replay ran: a duplicate
    deliver(stream, pub, pub.store(prompt(5, 32), 0, KvEventEncoder.Layout.TAGGED_MAP));
    assertThat(stream.duplicates()).isEqualTo(2);
    pub.buffer.clear(); // the engine restarts: its new process numbers from 0 again
    pub.next = 0;
    for (int i = 0; i < 4; i++) {
      pub.store(prompt(10 + i, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    }
    deliver(stream, pub, 3); // within the old replay's numbers, but the new process's batch
    assertThat(stream.restarts()).isEqualTo(1);
    assertThat(pub.asked).containsExactly(1L, 0L); // the gap's replay, then the new process's from 0
    assertThat(stream.duplicates()).isEqualTo(3); // the new replay applied the live batch too
    for (int i = 0; i < 4; i++) {
      assertThat(index.match(prompt(10 + i, 32)).matched(A)).isEqualTo(32);
    }
    assertThat(index.match(prompt(5, 32)).matched(A)).isZero();
  }

  @Test
  void aRestartedPublishersBatchNumberedInsideAReplaysWindowIsARestart() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    int[] p = prompt(1, 32);
    deliver(stream, pub, pub.store(p, 0, KvEventEncoder.Layout.TAGGED_MAP)); // 0
    pub.store(prompt(2, 32), 0, KvEventEncoder.Layout.TAGGED_MAP); // 1: lost in transit
    long two = pub.store(prompt(3, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    for (int i = 0; i < 3; i++) {
      pub.store(prompt(4 + i, 32), 0, KvEventEncoder.Layout.TAGGED_MAP); // 3..5: published during the replay
    }
    deliver(stream, pub, two); // the replay applies 1..5; 3..5 may still come live
    assertThat(stream.lastSeq()).isEqualTo(5);
    deliver(stream, pub, 3); // the old process's batch 3, as the replay delivered it: a duplicate
    assertThat(stream.duplicates()).isEqualTo(2);
    pub.buffer.clear(); // the engine restarts before the live socket brought 4 and 5
    pub.next = 0;
    for (int i = 0; i < 5; i++) {
      pub.store(prompt(10 + i, 32), 0, KvEventEncoder.Layout.TAGGED_MAP);
    }
    deliver(stream, pub, 4); // numbered inside the window, other bytes: the new process's
    assertThat(stream.restarts()).isEqualTo(1);
    assertThat(stream.duplicates()).isEqualTo(3); // the new process's replay applied 0..4, the live 4 with it
    assertThat(index.match(prompt(14, 32)).matched(A)).isEqualTo(32);
    assertThat(index.match(p).matched(A)).isZero();
  }

  @Test
  void anUndecodablePayloadIsCountedAndSkipped() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 0);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    stream.onMessage(0, new byte[] {(byte) 0xc1});
    assertThat(stream.undecodable()).isEqualTo(1);
    assertThat(stream.lastSeq()).isZero();
  }

  @Test
  void theLagIsNowMinusTheBatchTimestamp() {
    Publisher pub = new Publisher(100);
    KvEventStream stream = new KvEventStream(A, index, pub, () -> 1_500_000_000L);
    index.addBackend(A, 1 << 20);
    index.enableEvents(A);
    deliver(stream, pub, pub.store(prompt(1, 16), 0, KvEventEncoder.Layout.TAGGED_MAP)); // ts = 1.0 s
    assertThat(index.stats(A).lastEventLagNanos()).isEqualTo(500_000_000L);
  }
}
