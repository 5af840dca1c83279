package dev.kvroute.core.admission;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

final class AdmissionQueueTest {
  long now;
  final AdmissionQueue<String> q = new AdmissionQueue<>(() -> now, 8, 1000, Duration.ofSeconds(10), t -> 1.0);

  private String pollItem() {
    AdmissionQueue.Ticket<String> t = q.poll(x -> true);
    q.checkInvariants();
    return t == null ? null : t.item();
  }

  @Test
  void lowerPriorityNumbersAreServedFirstThenArrivalOrder() {
    q.offer("low", 5, "a", 1);
    q.offer("normal1", 0, "a", 1);
    q.offer("high", -3, "a", 1);
    q.offer("normal2", 0, "a", 1);
    assertThat(List.of(pollItem(), pollItem(), pollItem(), pollItem())).containsExactly("high", "normal1", "normal2", "low");
    assertThat(pollItem()).isNull();
  }

  @Test
  void aLightTenantIsNotQueuedBehindAHeavyTenantsBacklog() {
    AdmissionQueue<String> big = new AdmissionQueue<>(() -> now, 100, 1000, Duration.ofSeconds(10), t -> 1.0);
    for (int i = 0; i < 10; i++) {
      big.offer("heavy" + i, 0, "heavy", 1);
    }
    big.offer("light0", 0, "light", 1);
    List<String> served = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      served.add(big.poll(x -> true).item());
    }
    assertThat(served).contains("light0");
    // the heavy tenant's own order is kept
    List<String> rest = new ArrayList<>();
    AdmissionQueue.Ticket<String> t;
    while ((t = big.poll(x -> true)) != null) {
      rest.add(t.item());
    }
    assertThat(rest).isSortedAccordingTo((a, b) -> Integer.compare(Integer.parseInt(a.substring(5)), Integer.parseInt(b.substring(5))));
  }

  @Test
  void aWeightedTenantGetsItsShare() {
    AdmissionQueue<String> w = new AdmissionQueue<>(() -> now, 100, 1000, Duration.ofSeconds(10),
        t -> t.equals("gold") ? 3.0 : 1.0);
    for (int i = 0; i < 20; i++) {
      w.offer("gold", 0, "gold", 0);
      w.offer("free", 0, "free", 0);
    }
    int gold = 0;
    for (int i = 0; i < 20; i++) {
      if (w.poll(x -> true).tenant().equals("gold")) {
        gold++;
      }
    }
    assertThat(gold).isEqualTo(15);
  }

  @Test
  void aFullQueueShedsItsWorstTicketForABetterOneAndRefusesAWorseOne() {
    for (int i = 0; i < 8; i++) {
      assertThat(q.offer("n" + i, 0, "a", 1).ticket()).isNotNull();
    }
    AdmissionQueue.Offer<String> worse = q.offer("low", 1, "b", 1);
    assertThat(worse.ticket()).isNull();
    assertThat(worse.shed()).isEmpty();
    AdmissionQueue.Offer<String> same = q.offer("same", 0, "a", 1);
    assertThat(same.ticket()).as("same tenant, same priority: the newest waits its turn, refused").isNull();
    AdmissionQueue.Offer<String> better = q.offer("high", -1, "b", 1);
    assertThat(better.ticket()).isNotNull();
    assertThat(better.shed()).extracting(AdmissionQueue.Ticket::item).containsExactly("n7");
    assertThat(better.shed().get(0).queued()).isFalse();
    AdmissionQueue.Offer<String> fairer = q.offer("light", 0, "c", 1);
    assertThat(fairer.ticket()).as("a tenant behind its share displaces the heaviest tenant's newest").isNotNull();
    assertThat(fairer.shed()).extracting(AdmissionQueue.Ticket::item).containsExactly("n6");
    q.checkInvariants();
    assertThat(q.size()).isEqualTo(8);
  }

  @Test
  void theByteBoundCountsTheBodiesHeld() {
    assertThat(q.offer("a", 0, "a", 600).ticket()).isNotNull();
    assertThat(q.offer("b", 0, "a", 600).ticket()).isNull();
    assertThat(q.offer("huge", -5, "b", 2000).ticket()).as("larger than the bound: never").isNull();
    assertThat(q.offer("c", 0, "a", 400).ticket()).isNotNull();
    assertThat(q.bytes()).isEqualTo(1000);
    q.checkInvariants();
  }

  @Test
  void ticketsPastTheirDeadlineExpireOldestFirst() {
    q.offer("first", 0, "a", 1);
    now += Duration.ofSeconds(4).toNanos();
    q.offer("second", 0, "a", 1);
    assertThat(q.nextDeadlineNanos()).isEqualTo(Duration.ofSeconds(10).toNanos());
    now = Duration.ofSeconds(10).toNanos() - 1;
    assertThat(q.expire()).isEmpty();
    now += 1;
    assertThat(q.expire()).extracting(AdmissionQueue.Ticket::item).containsExactly("first");
    now += Duration.ofSeconds(4).toNanos();
    assertThat(q.expire()).extracting(AdmissionQueue.Ticket::item).containsExactly("second");
    assertThat(q.isEmpty()).isTrue();
    q.checkInvariants();
  }

  @Test
  void aRemovedTicketLeavesAtOnceAndOnlyOnce() {
    AdmissionQueue.Ticket<String> t = q.offer("gone", 0, "a", 10).ticket();
    q.offer("stays", 0, "a", 10);
    assertThat(q.remove(t)).isTrue();
    assertThat(q.remove(t)).isFalse();
    assertThat(q.bytes()).isEqualTo(10);
    assertThat(pollItem()).isEqualTo("stays");
  }

  @Test
  void pollSkipsTicketsThatCannotRunNow() {
    q.offer("model-a", 0, "t", 1);
    q.offer("model-b", 0, "t", 1);
    assertThat(q.poll(x -> x.endsWith("b")).item()).isEqualTo("model-b");
    assertThat(q.poll(x -> x.endsWith("b"))).isNull();
    assertThat(q.size()).isEqualTo(1);
  }

  @Test
  void retryAfterFollowsTheWaitsOfServedTicketsWithinOneSecondAndTheDeadline() {
    assertThat(q.retryAfterNanos()).isEqualTo(1_000_000_000L);
    q.offer("a", 0, "a", 1);
    now += Duration.ofSeconds(3).toNanos();
    q.poll(x -> true);
    assertThat(q.retryAfterNanos()).isEqualTo(Duration.ofSeconds(3).toNanos());
    q.offer("b", 0, "a", 1);
    now += Duration.ofSeconds(100).toNanos();
    q.poll(x -> true);
    assertThat(q.retryAfterNanos()).isEqualTo(Duration.ofSeconds(10).toNanos());
  }

  @Test
  void randomOperationsKeepTheBoundsPrioritiesAndEachTenantsOrder() {
    SplittableRandom r = new SplittableRandom(7);
    AdmissionQueue<Integer> rq = new AdmissionQueue<>(() -> now, 20, 400, Duration.ofSeconds(5), t -> 1.0);
    List<AdmissionQueue.Ticket<Integer>> live = new ArrayList<>();
    int next = 0;
    for (int step = 0; step < 20_000; step++) {
      now += r.nextLong(50_000_000L);
      int op = r.nextInt(10);
      if (op < 5) {
        String tenant = "t" + r.nextInt(r.nextBoolean() ? 2 : 6);
        AdmissionQueue.Offer<Integer> o = rq.offer(next++, r.nextInt(3) - 1, tenant, r.nextInt(40));
        if (o.ticket() != null) {
          live.add(o.ticket());
        }
      } else if (op < 8) {
        int best = Integer.MAX_VALUE;
        for (AdmissionQueue.Ticket<Integer> t : live) {
          if (t.queued()) {
            best = Math.min(best, t.priority());
          }
        }
        AdmissionQueue.Ticket<Integer> t = rq.poll(x -> true);
        if (t != null) {
          assertThat(t.priority()).isEqualTo(best);
          // within a tenant and a priority, arrival order
          for (AdmissionQueue.Ticket<Integer> o : live) {
            if (o.queued() && o.tenant().equals(t.tenant()) && o.priority() == t.priority()) {
              assertThat(o.item()).isGreaterThan(t.item());
            }
          }
        }
      } else if (op < 9 && !live.isEmpty()) {
        rq.remove(live.get(r.nextInt(live.size())));
      } else {
        for (AdmissionQueue.Ticket<Integer> t : rq.expire()) {
          assertThat(now - t.enqueuedNanos()).isGreaterThanOrEqualTo(Duration.ofSeconds(5).toNanos());
        }
      }
      live.removeIf(t -> !t.queued());
      rq.checkInvariants();
      assertThat(rq.size()).isEqualTo(live.size());
      assertThat(rq.tenantStates()).isLessThanOrEqualTo(2 * 20 + 16 + 6);
    }
  }
}
