package dev.kvroute.proxy;

import dev.kvroute.core.Ticker;
import dev.kvroute.core.admission.AdmissionQueue;
import dev.kvroute.core.load.BackendLoad;
import dev.kvroute.core.load.EngineLoad;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.proxy.config.AdmissionConfig;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.EventExecutor;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Admission control: gives each backend at most its concurrency limit of requests and keeps the rest
 * in the router's {@link AdmissionQueue} (priority, then fair share between tenants), so that an
 * overloaded fleet queues in the router, where a request can still be routed with the index and
 * loads of the moment it leaves, shed by priority, and refused with a clear 429 instead of waiting
 * unseen in an engine until a timeout.
 *
 * <p>A request is admitted at once when the queue is empty and the routable backends have a free
 * slot (limit minus this router's in-flight requests minus the foreign requests its engine
 * reports, over every routable backend, minus the requests admitted but not yet routed). Otherwise
 * it queues; a slot freed by a finished request, or the tick while the queue is not empty (every
 * 100 ms, to pick up new engine reports, and at the queue's next deadline), admits the next ticket,
 * which continues on its own event loop. See {@link AdmissionConfig} for the limits and the saturation
 * rule.
 *
 * <p><b>Deadlines on time.</b> A request's deadline counts from when the router had read it (not from
 * when it reached the queue), and the tick is scheduled at the earliest deadline, on the timer
 * executor given (the server passes its acceptor loop, which does no request I/O, so a burst that
 * keeps the worker loops busy does not delay it); the refusal is then written on the request's own
 * event loop.
 *
 * <p>Refusals: the queue is full (429 {@code queue_full}, or {@code shed} for a queued request
 * displaced by a better one) or its deadline passed (429 {@code deadline}); every 429 carries
 * {@code Retry-After} from {@link AdmissionQueue#retryAfterNanos}.
 *
 * <p>Thread-safe: every event loop admits and releases; the queue and the admitted-but-unrouted
 * count are guarded by one lock, held for a few operations (no I/O under it).
 */
final class Admission {
  /** A request waiting for admission: its callbacks run on its own event loop. */
  interface Waiter {
    EventLoop loop();

    /** Admitted: route and send now (then call {@link #routed} exactly once). */
    void admitted();

    /** Refused while queued (deadline, or shed for a better request). */
    void refused(String reason, String message, long retryAfterSeconds);
  }

  /** What {@link #admit} decided. */
  enum Decision { NOW, QUEUED, REFUSED }

  private static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private final AdmissionConfig config;
  private final BackendRegistry backends;
  private final LoadTracker loads;
  private final Ticker ticker;
  private final EventExecutor timerLoop;
  private final MeterRegistry meters;
  private final AdmissionQueue<Waiter> queue;
  private final Object lock = new Object();
  private final Set<String> tenantLabels = new HashSet<>();
  /** kvroute.admission.requests by result; guarded by {@link #lock}. */
  private final Map<String, Counter> resultCounters = new HashMap<>();
  /** kvroute.admission.tenant.requests by tenant label, then result; guarded by {@link #lock}. */
  private final Map<String, Map<String, Counter>> tenantCounters = new HashMap<>();
  private final Timer waitTimer;
  private int pending;
  private volatile boolean queueNonEmpty;
  private ScheduledFuture<?> tick;
  private long tickAtNanos = Long.MAX_VALUE;

  Admission(AdmissionConfig config, BackendRegistry backends, LoadTracker loads, Ticker ticker, EventExecutor timerLoop,
      MeterRegistry meters) {
    this.config = config;
    this.backends = backends;
    this.loads = loads;
    this.ticker = ticker;
    this.timerLoop = timerLoop;
    this.meters = meters;
    this.queue = new AdmissionQueue<>(ticker, config.maxQueueLength(), config.maxQueueBytes(), config.queueDeadline(),
        t -> 1.0);
    this.waitTimer = Timer.builder("kvroute.admission.queue.wait")
        .description("Time a request waited in the router's queue before it was admitted")
        .serviceLevelObjectives(Duration.ofMillis(10), Duration.ofMillis(50), Duration.ofMillis(100),
            Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1), Duration.ofSeconds(2),
            Duration.ofSeconds(5), Duration.ofSeconds(10), Duration.ofSeconds(20), Duration.ofSeconds(30),
            Duration.ofSeconds(60))
        .register(meters);
    for (String p : List.of("high", "normal", "low")) {
      Gauge.builder("kvroute.admission.queue.length", this, a -> a.queued(p))
          .description("Requests waiting in the router's queue, by priority class (high < 0 = normal < low)")
          .tags("priority", p)
          .register(meters);
    }
    Gauge.builder("kvroute.admission.queue.bytes", this, a -> a.queuedBytes())
        .description("Request body bytes held by the router's queue")
        .register(meters);
  }

  boolean enabled() {
    return config.enabled();
  }

  AdmissionConfig config() {
    return config;
  }

  /**
   * Admits {@code w} now, queues it, or refuses it (queue full, 429: the caller answers it with
   * {@link #retryAfterSeconds}). Requests already queued that were shed to make room are answered
   * through their {@link Waiter#refused}.
   *
   * @param priority the request's priority, asked only when it has to queue (it may read the body)
   * @param tenant the tenant key (already reduced to a bounded form, see {@link #tenantKey})
   */
  Decision admit(Waiter w, java.util.function.IntSupplier priority, String tenant, long bytes,
      AdmissionQueue.Ticket<Waiter>[] ticketOut) {
    return admit(w, priority, tenant, bytes, ticker.nanos(), ticketOut);
  }

  /**
   * As {@link #admit(Waiter, java.util.function.IntSupplier, String, long, AdmissionQueue.Ticket[])},
   * for a request the router read at {@code receivedNanos} (its ticker): a queued request's deadline
   * counts from then.
   */
  Decision admit(Waiter w, java.util.function.IntSupplier priority, String tenant, long bytes, long receivedNanos,
      AdmissionQueue.Ticket<Waiter>[] ticketOut) {
    List<AdmissionQueue.Ticket<Waiter>> shed;
    Decision d;
    synchronized (lock) {
      if (queue.isEmpty() && freeSlots() > pending) {
        pending++;
        count("admitted", tenant);
        return Decision.NOW;
      }
    }
    int p = priority.getAsInt(); // may read the body: not under the lock
    synchronized (lock) {
      if (queue.isEmpty() && freeSlots() > pending) {
        pending++;
        count("admitted", tenant);
        return Decision.NOW;
      }
      AdmissionQueue.Offer<Waiter> offer = queue.offer(w, p, tenant, bytes, receivedNanos);
      shed = offer.shed();
      if (offer.ticket() == null) {
        d = Decision.REFUSED;
        count("queue_full", tenant);
      } else {
        d = Decision.QUEUED;
        ticketOut[0] = offer.ticket();
        queueNonEmpty = true;
        count("queued", tenant);
      }
      for (AdmissionQueue.Ticket<Waiter> t : shed) {
        count("shed", t.tenant());
      }
      dispatch();
      scheduleTick();
    }
    long retry = retryAfterSeconds();
    for (AdmissionQueue.Ticket<Waiter> t : shed) {
      run(t.item(), () -> t.item().refused("shed",
          "the router's queue is full and this request has the lowest priority; retry after " + retry + " s", retry));
    }
    return d;
  }

  /** Takes a queued ticket out (its client went away); {@code false} if it had already left. */
  boolean cancel(AdmissionQueue.Ticket<Waiter> t) {
    synchronized (lock) {
      boolean removed = queue.remove(t);
      if (removed) {
        count("cancelled", t.tenant());
        queueNonEmpty = !queue.isEmpty();
      }
      return removed;
    }
  }

  /** An admitted request was routed (its lease now counts on a backend) or ended before routing. */
  void routed() {
    synchronized (lock) {
      pending--;
    }
  }

  /** A request finished on some backend: a slot may be free for the queue. */
  void released() {
    if (queueNonEmpty) {
      synchronized (lock) {
        dispatch();
      }
    }
  }

  /** Seconds a refused client should wait, at least 1. */
  long retryAfterSeconds() {
    long nanos;
    synchronized (lock) {
      nanos = queue.retryAfterNanos();
    }
    return Math.max(1, (nanos + 999_999_999L) / 1_000_000_000L);
  }

  /**
   * Whether {@code b} is saturated: its in-flight requests (this router's plus the foreign ones its
   * engine reports) reach its limit, or its engine reports KV usage at the threshold with requests
   * waiting.
   */
  boolean saturated(Backend b) {
    return free(b) <= 0;
  }

  /** The concurrency limit of {@code b}: configured, or derived from its engine's reports. */
  int limit(Backend b) {
    if (config.maxConcurrencyPerBackend() > 0) {
      return config.maxConcurrencyPerBackend();
    }
    int batch = b.fullBatch();
    return batch > 0 ? batch + config.engineQueueDepth() : config.initialConcurrencyPerBackend();
  }

  private int free(Backend b) {
    EngineLoad e = b.engineLoad();
    if (e != null && e.waiting() > 0 && e.kvUsage() >= config.kvUsageThreshold()) {
      return 0;
    }
    BackendLoad l = loads.load(b.id());
    return limit(b) - l.inFlightRequests() - l.foreignRequests();
  }

  private int freeSlots() {
    long sum = 0;
    boolean any = false;
    List<Backend> all = backends.all(); // the registry's snapshot, indexed: nothing allocated per request
    for (int i = 0; i < all.size(); i++) {
      Backend b = all.get(i);
      if (b.routable()) {
        any = true;
        sum += Math.max(0, free(b));
      }
    }
    if (!any) {
      return Integer.MAX_VALUE; // nothing to wait for: the request is answered 503 at once
    }
    return (int) Math.min(Integer.MAX_VALUE, sum);
  }

  /** Under the lock: admits queued tickets while slots are free. */
  private void dispatch() {
    while (!queue.isEmpty()) {
      if (freeSlots() <= pending) {
        break;
      }
      AdmissionQueue.Ticket<Waiter> t = queue.poll(x -> true);
      pending++;
      waitTimer.record(ticker.nanos() - t.enqueuedNanos(), TimeUnit.NANOSECONDS);
      count("admitted", t.tenant());
      Waiter w = t.item();
      run(w, w::admitted);
    }
    queueNonEmpty = !queue.isEmpty();
  }

  /** Runs {@code task} on {@code w}'s event loop; a loop shutting down closes its connections itself. */
  private static void run(Waiter w, Runnable task) {
    try {
      w.loop().execute(task);
    } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
      // the proxy is closing: the client connection is closed with its loop
    }
  }

  /**
   * Under the lock: while the queue is not empty, makes sure {@link #onTick} runs within 100 ms and at
   * the queue's earliest deadline, whichever comes first (an earlier tick already scheduled stays).
   */
  private void scheduleTick() {
    if (queue.isEmpty()) {
      if (tick != null) {
        tick.cancel(false);
        tick = null;
        tickAtNanos = Long.MAX_VALUE;
      }
      return;
    }
    long now = ticker.nanos();
    long at = Math.min(now + TICK_NANOS, queue.nextDeadlineNanos());
    if (tick != null && tickAtNanos <= at) {
      return;
    }
    if (tick != null) {
      tick.cancel(false);
    }
    tickAtNanos = at;
    try {
      tick = timerLoop.schedule(this::onTick, Math.max(0, at - now), TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
      tick = null; // the router is closing: its connections are closed with their loops
      tickAtNanos = Long.MAX_VALUE;
    }
  }

  private void onTick() {
    List<AdmissionQueue.Ticket<Waiter>> expired;
    synchronized (lock) {
      tick = null;
      tickAtNanos = Long.MAX_VALUE;
      expired = queue.expire();
      for (AdmissionQueue.Ticket<Waiter> t : expired) {
        count("deadline", t.tenant());
      }
      dispatch();
      scheduleTick();
    }
    if (!expired.isEmpty()) {
      long retry = retryAfterSeconds();
      String message = "the request waited " + config.queueDeadline().toMillis()
          + " ms in the router's queue (every backend is saturated); retry after " + retry + " s";
      for (AdmissionQueue.Ticket<Waiter> t : expired) {
        run(t.item(), () -> t.item().refused("deadline", message, retry));
      }
    }
  }

  private double queued(String priorityClass) {
    synchronized (lock) {
      switch (priorityClass) {
        case "high":
          return queue.sizeBelow(0);
        case "normal":
          return queue.size(0);
        default:
          return queue.sizeAbove(0);
      }
    }
  }

  private double queuedBytes() {
    synchronized (lock) {
      return queue.bytes();
    }
  }

  /**
   * Counts one admission result for {@code tenant}; at most {@code maxTenantLabels} tenants are named.
   * Under the lock. Each counter is built and registered once, on its first use, and kept in a map by
   * its tag values (bounded: the results above times at most {@code maxTenantLabels} + 1 tenant labels),
   * so the request path does no Micrometer builder or registry lookup.
   */
  private void count(String result, String tenant) {
    resultCounters.computeIfAbsent(result, r -> Counter.builder("kvroute.admission.requests")
        .description("Admission results: admitted, queued, queue_full, shed, deadline, cancelled")
        .tags("result", r)
        .register(meters)).increment();
    String label;
    if (tenantLabels.contains(tenant)) {
      label = tenant;
    } else if (tenantLabels.size() < config.maxTenantLabels()) {
      tenantLabels.add(tenant);
      label = tenant;
    } else {
      label = "other";
    }
    tenantCounters.computeIfAbsent(label, t -> new HashMap<>())
        .computeIfAbsent(result, r -> Counter.builder("kvroute.admission.tenant.requests")
            .description("Admission results by tenant (the first admission.maxTenantLabels tenants seen; the rest as other)")
            .tags("tenant", label, "result", r)
            .register(meters))
        .increment();
  }

  /**
   * The tenant key of a request, as {@code admission.tenant} says: a hash of the
   * {@code Authorization} header (12 hex digits of SHA-256; never the key itself), the body's
   * {@code user} field, a header's value (at most 64 characters), or {@code default}. A request
   * without one is {@code anonymous}.
   */
  static String tenantKey(String from, String authorization, String user, java.util.function.Function<String, String> header) {
    String raw;
    if (from.equals("api-key")) {
      if (authorization == null || authorization.isBlank()) {
        return "anonymous";
      }
      return "key-" + sha256Hex(authorization.trim()).substring(0, 12);
    } else if (from.equals("user")) {
      raw = user;
    } else if (from.startsWith("header:")) {
      raw = header.apply(from.substring(7));
    } else {
      return "default";
    }
    if (raw == null || raw.isBlank()) {
      return "anonymous";
    }
    return raw.length() > 64 ? raw.substring(0, 64) : raw;
  }

  private static String sha256Hex(String s) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
      StringBuilder sb = new StringBuilder(64);
      for (byte x : d) {
        sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
      }
      return sb.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The priority class label of a priority: high (< 0), normal (0), low (> 0). */
  static String priorityClass(int priority) {
    return priority < 0 ? "high" : priority == 0 ? "normal" : "low";
  }
}
