package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

final class JitQuietTest {
  private static final long POLL = TimeUnit.MILLISECONDS.toNanos(50);

  /** Polls every 50 ms with {@code perPoll} more requests answered each time; the last answer. */
  private static boolean pollFor(JitQuiet q, AtomicInteger answered, AtomicLong now, int polls, int perPoll) {
    boolean quiet = false;
    for (int i = 0; i < polls; i++) {
      quiet = q.poll(answered.addAndGet(perPoll), now.addAndGet(POLL));
    }
    return quiet;
  }

  @Test
  void aBusyCompilerIsNeverQuietHoweverLongItRuns() {
    JitQuiet q = new JitQuiet(() -> 3, null);
    AtomicInteger answered = new AtomicInteger();
    AtomicLong now = new AtomicLong();
    for (int i = 0; i < 200; i++) {
      assertThat(q.poll(answered.addAndGet(100), now.addAndGet(POLL))).isFalse();
    }
  }

  @Test
  void quietOnlyAfterASecondAndAThousandRequestsWithAnIdleCompiler() {
    JitQuiet q = new JitQuiet(() -> 0, null);
    AtomicInteger answered = new AtomicInteger();
    AtomicLong now = new AtomicLong();
    // 100 requests a poll: the window spans 1,024 requests after 11 polls but a second only after 20
    assertThat(pollFor(q, answered, now, 19, 100)).isFalse();
    assertThat(pollFor(q, answered, now, 2, 100)).isTrue();
    // a second without requests proves nothing
    JitQuiet idleTraffic = new JitQuiet(() -> 0, null);
    AtomicInteger none = new AtomicInteger();
    assertThat(pollFor(idleTraffic, none, new AtomicLong(), 100, 0)).isFalse();
  }

  @Test
  void aTrickleOfSmallCompilationsIsQuietButTheRequestPathsBacklogIsNot() {
    AtomicInteger calls = new AtomicInteger();
    // busy at one poll in five: under the share
    JitQuiet trickle = new JitQuiet(() -> calls.incrementAndGet() % 5 == 0 ? 1 : 0, null);
    assertThat(pollFor(trickle, new AtomicInteger(), new AtomicLong(), 40, 100)).isTrue();
    // busy at one poll in two: over it
    AtomicInteger calls2 = new AtomicInteger();
    JitQuiet half = new JitQuiet(() -> calls2.incrementAndGet() % 2 == 0 ? 1 : 0, null);
    assertThat(pollFor(half, new AtomicInteger(), new AtomicLong(), 40, 100)).isFalse();
  }

  @Test
  void aBacklogEndsTheQuietAndHoldsTheClientBack() {
    AtomicInteger pending = new AtomicInteger();
    JitQuiet q = new JitQuiet(pending::get, null);
    AtomicInteger answered = new AtomicInteger();
    AtomicLong now = new AtomicLong();
    assertThat(pollFor(q, answered, now, 30, 100)).isTrue();
    assertThat(q.backlogged()).isFalse();
    pending.set(JitQuiet.PAUSE_BACKLOG);
    assertThat(pollFor(q, answered, now, 10, 100)).isFalse();
    assertThat(q.backlogged()).isTrue();
    pending.set(0);
    assertThat(q.poll(answered.addAndGet(100), now.addAndGet(POLL))).isFalse();
    assertThat(q.backlogged()).isFalse();
  }

  @Test
  void withoutTheBacklogAGrowingCompilationTimeIsBusy() {
    AtomicLong millis = new AtomicLong();
    JitQuiet q = new JitQuiet(() -> CompilerBacklog.UNKNOWN, millis::get);
    AtomicInteger answered = new AtomicInteger();
    AtomicLong now = new AtomicLong();
    for (int i = 0; i < 40; i++) {
      millis.addAndGet(7);
      assertThat(q.poll(answered.addAndGet(100), now.addAndGet(POLL))).isFalse();
    }
    assertThat(pollFor(q, answered, now, 21, 100)).isTrue();
  }

  @Test
  void withNothingToAskTheCountAloneEndsIt() {
    assertThat(new JitQuiet(null, null).poll(0, 0)).isTrue();
    assertThat(new JitQuiet(null, null).backlogged()).isFalse();
  }
}
