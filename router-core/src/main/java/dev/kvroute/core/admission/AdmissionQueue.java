package dev.kvroute.core.admission;

import dev.kvroute.core.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.function.ToDoubleFunction;

/**
 * The router's queue of requests waiting for a backend slot: bounded in length, bytes and time,
 * ordered by priority, and fair between tenants within a priority.
 *
 * <p><b>Order.</b> A lower {@code priority} number is served first (vLLM's {@code priority} request
 * field reads the same way). Within one priority, tenants share the queue by start-time fair queuing
 * (Goyal, Vin and Cheng, SIGCOMM 1996): each ticket gets the start tag {@code S = max(V, F(tenant))}
 * and the finish tag {@code S + 1 / weight(tenant)}, where {@code V} is the start tag of the ticket
 * served last at that priority and {@code F} the finish tag of the tenant's previous ticket, and the
 * smallest start tag is served first (then arrival order). A tenant sending ten times another's rate
 * therefore gets its turns only after the light tenant's: a light tenant's ticket starts at {@code V},
 * before the heavy tenant's next ticket (which starts one turn later), so it waits for the next free
 * slot, never behind the heavy tenant's backlog.
 *
 * <p><b>Bounds.</b> At most {@code maxLength} tickets and {@code maxBytes} bytes (the request bodies
 * the tickets hold). An offer beyond either bound sheds the worst ticket in the queue (highest
 * priority number, then largest start tag: the newest request of the tenant most ahead of its share) if
 * the new one is better, else refuses the new one; a shed ticket is returned to the caller, who
 * answers it. A ticket older than {@code deadline} is returned by {@link #expire}.
 *
 * <p><b>Retry-After.</b> {@link #retryAfterNanos} estimates how long a refused client should wait:
 * the exponentially weighted mean (weight 1/8) of the queue waits of the tickets served lately,
 * at least one second and at most {@code deadline}.
 *
 * <p>Time comes from the injected {@link Ticker}, so the simulator runs this class in virtual time.
 * Memory: the tickets queued plus the state of tenants with a ticket queued or served recently.
 *
 * <p>Not thread-safe: the caller serializes access (the proxy under one lock, the simulator on its
 * single thread).
 *
 * @param <T> what a ticket carries (the waiting request)
 */
public final class AdmissionQueue<T> {
  /** One queued request. Identity matters: {@link #remove} takes the ticket {@link #offer} returned. */
  public static final class Ticket<T> {
    private final T item;
    private final int priority;
    private final String tenant;
    private final long bytes;
    private final long enqueuedNanos;
    private final long deadlineNanos;
    private final double tag;
    private final double finish;
    private final long seq;
    private boolean queued = true;

    private Ticket(T item, int priority, String tenant, long bytes, long enqueuedNanos, long deadlineNanos, double tag,
        double finish, long seq) {
      this.finish = finish;
      this.item = item;
      this.priority = priority;
      this.tenant = tenant;
      this.bytes = bytes;
      this.enqueuedNanos = enqueuedNanos;
      this.deadlineNanos = deadlineNanos;
      this.tag = tag;
      this.seq = seq;
    }

    public T item() {
      return item;
    }

    public int priority() {
      return priority;
    }

    public String tenant() {
      return tenant;
    }

    /** When it was queued, in the queue's ticker nanoseconds. */
    public long enqueuedNanos() {
      return enqueuedNanos;
    }

    /** Whether it is still in the queue (not served, expired, shed or removed). */
    public boolean queued() {
      return queued;
    }

    @Override
    public String toString() {
      return "Ticket[p=" + priority + ", tenant=" + tenant + ", tag=" + tag + ", seq=" + seq + "]";
    }
  }

  /**
   * What {@link #offer} did.
   *
   * @param ticket the queued ticket, or {@code null} when the offer was refused (queue full of
   *     better-or-equal tickets)
   * @param shed tickets removed to make room (to be answered as refused); empty when none
   */
  public record Offer<T>(Ticket<T> ticket, List<Ticket<T>> shed) {}

  private static final Comparator<Ticket<?>> ORDER = Comparator.<Ticket<?>>comparingInt(t -> t.priority)
      .thenComparingDouble(t -> t.tag)
      .thenComparingLong(t -> t.seq);
  private static final Comparator<Ticket<?>> BY_DEADLINE = Comparator.<Ticket<?>>comparingLong(t -> t.deadlineNanos)
      .thenComparingLong(t -> t.seq);

  private final Ticker ticker;
  private final int maxLength;
  private final long maxBytes;
  private final long deadlineNanos;
  private final ToDoubleFunction<String> weight;
  private final TreeSet<Ticket<T>> order = new TreeSet<>(ORDER);
  private final TreeSet<Ticket<T>> byDeadline = new TreeSet<>(BY_DEADLINE);
  private final Map<Integer, Double> virtualTime = new HashMap<>();
  private final Map<String, Tenant> tenants = new HashMap<>();
  private long bytes;
  private long seq;
  private double meanWaitNanos = -1;

  private static final class Tenant {
    double lastTag;
    int queued;
  }

  /**
   * @param ticker the clock of deadlines and waits
   * @param maxLength most tickets queued, {@code >= 0} (0: every offer is refused)
   * @param maxBytes most bytes queued, {@code >= 0}
   * @param deadline longest wait in the queue, positive
   * @param weight a tenant's share weight, positive (1 for equal shares)
   * @throws IllegalArgumentException on a bound out of range
   */
  public AdmissionQueue(Ticker ticker, int maxLength, long maxBytes, Duration deadline, ToDoubleFunction<String> weight) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    if (maxLength < 0 || maxBytes < 0) {
      throw new IllegalArgumentException("maxLength " + maxLength + ", maxBytes " + maxBytes + " (expected: >= 0)");
    }
    if (deadline.isNegative() || deadline.isZero()) {
      throw new IllegalArgumentException("deadline: " + deadline + " (expected: > 0)");
    }
    this.maxLength = maxLength;
    this.maxBytes = maxBytes;
    this.deadlineNanos = deadline.toNanos();
    this.weight = Objects.requireNonNull(weight, "weight");
  }

  /**
   * Queues {@code item}, shedding worse tickets when a bound is reached.
   *
   * @param priority lower is served earlier
   * @param tenant the fairness key (never {@code null})
   * @param itemBytes the bytes the item holds while queued, {@code >= 0}
   */
  public Offer<T> offer(T item, int priority, String tenant, long itemBytes) {
    return offer(item, priority, tenant, itemBytes, ticker.nanos());
  }

  /**
   * As {@link #offer(Object, int, String, long)}, for a request that arrived at {@code arrivedNanos}
   * (ticker nanoseconds, at or before now): its deadline counts from then, so the time it spent before
   * reaching the queue (reading, parsing, tokenizing, waiting for its event loop) counts against it,
   * as its client sees it. A later {@code arrivedNanos} counts as now.
   */
  public Offer<T> offer(T item, int priority, String tenant, long itemBytes, long arrivedNanos) {
    long now = ticker.nanos();
    long from = Math.min(now, arrivedNanos);
    Tenant state = tenants.get(tenant);
    double vt = virtualTime.getOrDefault(priority, 0.0);
    double w = weight.applyAsDouble(tenant);
    double start = Math.max(vt, state == null ? vt : state.lastTag);
    double finish = start + 1.0 / (w > 0 ? w : 1.0);
    Ticket<T> t = new Ticket<>(item, priority, tenant, itemBytes, now, from + deadlineNanos, start, finish, seq++);
    List<Ticket<T>> shed = List.of();
    while (order.size() + 1 > maxLength || bytes + itemBytes > maxBytes) {
      Ticket<T> worst = order.isEmpty() ? null : order.last();
      if (worst == null || ORDER.compare(t, worst) >= 0 || itemBytes > maxBytes) {
        return new Offer<>(null, shed);
      }
      if (shed.isEmpty()) {
        shed = new ArrayList<>(1);
      }
      unlink(worst);
      shed.add(worst);
    }
    state = tenants.get(tenant); // a shed ticket may have dropped it
    if (state == null) {
      state = new Tenant();
      tenants.put(tenant, state);
    }
    state.lastTag = Math.max(state.lastTag, finish);
    state.queued++;
    order.add(t);
    byDeadline.add(t);
    bytes += itemBytes;
    return new Offer<>(t, shed);
  }

  /**
   * Takes the first ticket in order whose item {@code runnable} accepts (with one set of backends for
   * every request, simply the first), or {@code null}. Its wait feeds {@link #retryAfterNanos}.
   */
  public Ticket<T> poll(Predicate<? super T> runnable) {
    for (Iterator<Ticket<T>> it = order.iterator(); it.hasNext(); ) {
      Ticket<T> t = it.next();
      if (runnable.test(t.item)) {
        virtualTime.put(t.priority, Math.max(virtualTime.getOrDefault(t.priority, 0.0), t.tag));
        unlink(t);
        long wait = ticker.nanos() - t.enqueuedNanos;
        meanWaitNanos = meanWaitNanos < 0 ? wait : meanWaitNanos + (wait - meanWaitNanos) / 8;
        return t;
      }
    }
    return null;
  }

  /** Removes {@code t} (its client went away); {@code false} if it was no longer queued. */
  public boolean remove(Ticket<T> t) {
    if (!t.queued) {
      return false;
    }
    unlink(t);
    return true;
  }

  /** Removes and returns the tickets whose deadline has passed, oldest first. */
  public List<Ticket<T>> expire() {
    long now = ticker.nanos();
    List<Ticket<T>> out = List.of();
    while (!byDeadline.isEmpty() && byDeadline.first().deadlineNanos <= now) {
      Ticket<T> t = byDeadline.first();
      unlink(t);
      if (out.isEmpty()) {
        out = new ArrayList<>();
      }
      out.add(t);
    }
    return out;
  }

  /** The earliest deadline of a queued ticket, or {@code Long.MAX_VALUE} when empty. */
  public long nextDeadlineNanos() {
    return byDeadline.isEmpty() ? Long.MAX_VALUE : byDeadline.first().deadlineNanos;
  }

  /** How long a refused client should wait before retrying: see the class comment. */
  public long retryAfterNanos() {
    long floor = 1_000_000_000L;
    long estimate = meanWaitNanos < 0 ? floor : (long) meanWaitNanos;
    return Math.min(Math.max(floor, estimate), Math.max(floor, deadlineNanos));
  }

  public int size() {
    return order.size();
  }

  public boolean isEmpty() {
    return order.isEmpty();
  }

  /** Tickets queued at {@code priority}. */
  public int size(int priority) {
    int n = 0;
    for (Ticket<T> t : order) {
      if (t.priority == priority) {
        n++;
      }
    }
    return n;
  }

  /** Tickets queued at a priority number below {@code priority} (served earlier). */
  public int sizeBelow(int priority) {
    int n = 0;
    for (Ticket<T> t : order) {
      if (t.priority >= priority) {
        break;
      }
      n++;
    }
    return n;
  }

  /** Tickets queued at a priority number above {@code priority} (served later). */
  public int sizeAbove(int priority) {
    int n = 0;
    for (Ticket<T> t : order.descendingSet()) {
      if (t.priority <= priority) {
        break;
      }
      n++;
    }
    return n;
  }

  /** Bytes the queued tickets hold. */
  public long bytes() {
    return bytes;
  }

  /** Tenants with state kept (for tests: bounded by the tickets queued plus those served lately). */
  int tenantStates() {
    return tenants.size();
  }

  /** Checks the internal bookkeeping; for tests. */
  void checkInvariants() {
    if (order.size() != byDeadline.size()) {
      throw new IllegalStateException("order " + order.size() + " != byDeadline " + byDeadline.size());
    }
    long b = 0;
    Map<String, Integer> perTenant = new HashMap<>();
    for (Ticket<T> t : order) {
      b += t.bytes;
      perTenant.merge(t.tenant, 1, Integer::sum);
      if (!t.queued) {
        throw new IllegalStateException("unqueued ticket in order: " + t);
      }
    }
    if (b != bytes) {
      throw new IllegalStateException("bytes " + bytes + " != " + b);
    }
    for (Map.Entry<String, Tenant> e : tenants.entrySet()) {
      if (e.getValue().queued != perTenant.getOrDefault(e.getKey(), 0)) {
        throw new IllegalStateException("tenant " + e.getKey() + " queued " + e.getValue().queued);
      }
    }
    if (order.size() > maxLength || bytes > maxBytes) {
      throw new IllegalStateException("over bounds: " + order.size() + " tickets, " + bytes + " bytes");
    }
  }

  private void unlink(Ticket<T> t) {
    order.remove(t);
    byDeadline.remove(t);
    t.queued = false;
    bytes -= t.bytes;
    Tenant s = tenants.get(t.tenant);
    if (s != null && --s.queued == 0 && s.lastTag <= virtualTime.getOrDefault(t.priority, 0.0)) {
      tenants.remove(t.tenant); // caught up with its share: nothing to remember
    }
    if (tenants.size() > 2 * maxLength + 16) {
      // tenants whose last tickets were shed or removed while ahead of their share
      tenants.values().removeIf(x -> x.queued == 0);
    }
  }
}
