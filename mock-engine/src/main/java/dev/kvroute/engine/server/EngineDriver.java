package dev.kvroute.engine.server;

import dev.kvroute.engine.kvevents.ZmqKvEventPublisher;
import dev.kvroute.engine.model.EngineListener;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import dev.kvroute.engine.model.EngineStats;
import dev.kvroute.engine.model.KvCacheEvent;
import dev.kvroute.engine.model.LoraSlots;
import io.netty.channel.EventLoop;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.concurrent.TimeUnit;

/**
 * Drives one {@link EngineModel} in wall-clock time on one event loop: model time is the wall time
 * elapsed since start times the time scale K. After every change it schedules a single timer at the
 * wall time of the model's next event ({@code nextEventNanos / K}, rounded up to {@link
 * #TIMER_SLACK_NANOS}); the timer advances the model to
 * the current model time, hands the events to the requests' {@link Sink sinks}, records metrics, and
 * flushes every sink written to in that pass (one flush per connection per pass). Events carry their
 * model time, so a late timer delays writes but never the reported times; how late each timer fired
 * (beyond its slack) is recorded as the clock lag ({@code kvroute_mock_clock_lag_seconds}, model
 * seconds), the measure of whether this machine keeps up with the time scale.
 *
 * <p>Not thread-safe: every method must run on {@link #loop()}.
 */
final class EngineDriver implements EngineListener {

  /** Where one request's events go. Called on the loop, during {@link EngineModel#advanceTo}. */
  interface Sink {
    void onFirstToken(long engineId, int cachedTokens);

    void onToken(long engineId, int index);

    void onFinished(long engineId, String reason);

    /** Flushes what the callbacks of this pass wrote. */
    void flush();
  }

  /**
   * Wall-clock granularity of the timer: an event is written at most this late (its reported model
   * time is exact). Bounds wake-ups to 1000 per second however many streams are open.
   */
  static final long TIMER_SLACK_NANOS = 1_000_000L;

  private static final class Tracked {
    final Sink sink;
    final long arrival;
    long firstToken = -1;
    long scheduled;
    long lastToken;
    int tokens;

    Tracked(Sink sink, long arrival) {
      this.sink = sink;
      this.arrival = arrival;
    }
  }

  /**
   * The requests of one generation request (its choices) run with a LoRA adapter, from their arrival
   * until every one has ended: they hold one use of the adapter's slot.
   */
  private static final class LoraGroup {
    final EngineRequest[] requests;
    final Sink sink;
    final String adapter;
    final long arrival;
    int remaining;
    boolean acquired;
    boolean submitted;
    /** Model time its adapter is active, while it waits for the adapter's load. */
    long readyNanos;
    long seq;

    LoraGroup(EngineRequest[] requests, Sink sink, String adapter, long arrival) {
      this.requests = requests;
      this.sink = sink;
      this.adapter = adapter;
      this.arrival = arrival;
      this.remaining = requests.length;
    }
  }

  private final EventLoop loop;
  private final EngineModel model;
  private final LoraSlots loraSlots;
  private final Map<Long, LoraGroup> loraGroups = new HashMap<>();
  private final ArrayDeque<LoraGroup> loraWaiting = new ArrayDeque<>();
  /** Groups holding a slot whose adapter is loading, by the model time it is active. */
  private final PriorityQueue<LoraGroup> loraLoading = new PriorityQueue<>(
      Comparator.comparingLong((LoraGroup g) -> g.readyNanos).thenComparingLong(g -> g.seq));
  private long nextLoraSeq;
  private final double timeScale;
  private final long startWall;
  private final EngineMetrics metrics;
  private final Map<Long, Tracked> tracked = new HashMap<>();
  private final ArrayList<Sink> dirty = new ArrayList<>();
  private final ArrayList<Long> deferredAborts = new ArrayList<>();
  /** Where the model's KV events go, or null when the engine does not publish them. */
  private final ZmqKvEventPublisher kvEvents;
  /** Epoch nanoseconds at {@link #startWall}: a batch's {@code ts} is this plus its model time / K. */
  private final long startEpochNanos;
  private ScheduledFuture<?> timer;
  private long timerModelNanos = Long.MAX_VALUE;
  /** Wall nanoseconds since start at which the pending timer is due (its slack included). */
  private long timerDueWall;
  private boolean advancing;
  private long nextId = 1;

  EngineDriver(EventLoop loop, EngineModel model, double timeScale, long startWall, EngineMetrics metrics) {
    this(loop, model, timeScale, startWall, metrics, null, 0);
  }

  /**
   * A driver that publishes the model's KV events to {@code kvEvents} (null for none), each batch
   * stamped with the wall-clock time of its step: {@code startEpochNanos + modelNanos / K}, in epoch
   * seconds, as vLLM stamps {@code time.time()}.
   */
  EngineDriver(EventLoop loop, EngineModel model, double timeScale, long startWall, EngineMetrics metrics,
      ZmqKvEventPublisher kvEvents, long startEpochNanos) {
    this(loop, model, timeScale, startWall, metrics, kvEvents, startEpochNanos, new LoraSlots(1, 0));
  }

  /**
   * As above, with the engine's adapter slots {@code loraSlots}: a request run with an adapter starts
   * once its adapter is active (after a load, in model time, when it was not), and waits while every
   * slot is busy.
   */
  EngineDriver(EventLoop loop, EngineModel model, double timeScale, long startWall, EngineMetrics metrics,
      ZmqKvEventPublisher kvEvents, long startEpochNanos, LoraSlots loraSlots) {
    this.loop = loop;
    this.model = model;
    this.loraSlots = loraSlots;
    this.timeScale = timeScale;
    this.startWall = startWall;
    this.metrics = metrics;
    this.kvEvents = kvEvents;
    this.startEpochNanos = startEpochNanos;
  }

  /** Resets the model's prefix cache now (vLLM's {@code /reset_prefix_cache}); false if blocks are in use. */
  boolean resetPrefixCache() {
    long now = modelNow();
    advance(now);
    advancing = true;
    boolean reset;
    try {
      reset = model.resetPrefixCache(now, this);
    } finally {
      advancing = false;
    }
    reschedule();
    return reset;
  }

  EventLoop loop() {
    return loop;
  }

  EngineModel model() {
    return model;
  }

  /** Model nanoseconds since start. */
  long modelNow() {
    return (long) ((System.nanoTime() - startWall) * timeScale);
  }

  /** Reserves {@code n} consecutive engine request ids; returns the first. */
  long reserveIds(int n) {
    long first = nextId;
    nextId += n;
    return first;
  }

  /**
   * Submits requests arriving now, all reporting to {@code sink}. Requests run with a LoRA adapter (all
   * of one call share it) reach the engine model once their adapter is active: at once when it is,
   * after its load time when a slot is free or idle, else once a slot frees up (see {@link
   * LoraSlots}). Their TTFT counts from now.
   */
  void submit(EngineRequest[] requests, Sink sink) {
    long now = modelNow();
    advance(now);
    String adapter = requests.length == 0 ? null : requests[0].loraName();
    if (adapter == null) {
      submitToModel(requests, sink, now, now);
      return;
    }
    LoraGroup g = new LoraGroup(requests, sink, adapter, now);
    for (EngineRequest r : requests) {
      loraGroups.put(r.id(), g);
    }
    if (!startLora(g, now)) {
      loraWaiting.add(g);
    }
    reschedule();
  }

  private void submitToModel(EngineRequest[] requests, Sink sink, long arrival, long now) {
    for (EngineRequest r : requests) {
      model.submit(r, now);
      tracked.put(r.id(), new Tracked(sink, arrival));
    }
    reschedule();
  }

  /**
   * Takes a slot use for {@code g} at model time {@code now} and submits it when its adapter is
   * active: now, or at the model time its load ends (an event of {@link #advance}, like the model's
   * own, so a late timer never delays it in model time); false if no slot.
   */
  private boolean startLora(LoraGroup g, long now) {
    long ready = loraSlots.acquire(g.adapter, g.arrival, now);
    if (ready < 0) {
      return false;
    }
    g.acquired = true;
    if (ready <= now) {
      g.submitted = true;
      submitToModel(g.requests, g.sink, g.arrival, now);
    } else {
      g.readyNanos = ready;
      g.seq = nextLoraSeq++;
      loraLoading.add(g);
    }
    return true;
  }

  /**
   * At model time {@code t} (the model advanced to it): gives the slots freed by then to the requests
   * waiting for one, then submits the groups whose adapter is active by then, in that order.
   */
  private void loraDue(long t) {
    if (!loraWaiting.isEmpty()) {
      startWaitingLora(t);
    }
    while (!loraLoading.isEmpty() && loraLoading.peek().readyNanos <= t) {
      LoraGroup g = loraLoading.poll();
      g.submitted = true;
      submitToModel(g.requests, g.sink, g.arrival, t);
    }
  }

  /** Model time of the next event: the model's, or an adapter load ending; {@link Long#MAX_VALUE} if none. */
  private long nextEventNanos() {
    LoraGroup g = loraLoading.peek();
    return g == null ? model.nextEventNanos() : Math.min(model.nextEventNanos(), g.readyNanos);
  }

  /** One request of a LoRA group ended (finished, or aborted before it reached the model). */
  private void loraRequestEnded(long engineId, long now) {
    LoraGroup g = loraGroups.remove(engineId);
    if (g == null || --g.remaining > 0) {
      return;
    }
    if (g.acquired) {
      if (!g.submitted) {
        loraLoading.remove(g);
      }
      loraSlots.release(g.adapter, now);
    } else {
      loraWaiting.remove(g);
    }
    if (!advancing) {
      startWaitingLora(now);
    } // else: at this event's time, once the model's advance to it returns (loraDue)
  }

  /** Starts the requests waiting for an adapter slot, in arrival order, while slots are free. */
  private void startWaitingLora(long now) {
    while (!loraWaiting.isEmpty() && startLora(loraWaiting.peek(), now)) {
      loraWaiting.poll();
    }
  }

  /** The adapter slots (for {@code vllm:lora_requests_info} and runtime unloads). */
  LoraSlots loraSlots() {
    return loraSlots;
  }

  /**
   * Adapters with requests waiting for a slot (every slot busy with other adapters), in arrival order:
   * vLLM's {@code waiting_lora_adapters}. An adapter loading for a request is running (vLLM loads it
   * as part of the step that schedules the request).
   */
  java.util.List<String> waitingAdapters() {
    java.util.LinkedHashSet<String> out = new java.util.LinkedHashSet<>();
    for (LoraGroup g : loraWaiting) {
      out.add(g.adapter);
    }
    return java.util.List.copyOf(out);
  }

  /**
   * The model's stats with the requests that have not reached it yet: those waiting for an adapter
   * slot count as waiting ({@code vllm:num_requests_waiting}: vLLM's scheduler leaves a request that
   * would exceed {@code max_loras} in its waiting queue), those whose adapter is loading as running
   * (vLLM loads the adapter in the step that runs them).
   */
  EngineStats stats() {
    int waiting = 0;
    for (LoraGroup g : loraWaiting) {
      waiting += g.requests.length;
    }
    int loading = 0;
    for (LoraGroup g : loraLoading) {
      loading += g.requests.length;
    }
    return model.stats().plusNotYetInModel(loading, waiting);
  }

  /**
   * Aborts a request (counted as {@code abort}): now, or, when called from a listener callback during
   * an advance, at the model time of the event being processed, before any later event.
   */
  void abort(long engineId) {
    if (advancing) {
      deferredAborts.add(engineId);
      return;
    }
    long now = modelNow();
    advance(now);
    if (abortPending(engineId, now)) {
      flushDirty();
      reschedule();
      return;
    }
    if (!tracked.containsKey(engineId)) {
      reschedule();
      return;
    }
    advancing = true;
    try {
      model.abort(engineId, now, this);
      drainAborts(now);
    } finally {
      advancing = false;
    }
    flushDirty();
    reschedule();
  }

  /** Marks a sink as written to in this pass; it is flushed at the end of the pass. */
  void markDirty(Sink sink) {
    dirty.add(sink);
  }

  /**
   * Advances the model to {@code now} one event instant at a time, so that aborts requested by the
   * callbacks of one instant (a fault closing the connection) take effect at that instant.
   */
  private void advance(long now) {
    advancing = true;
    try {
      long next;
      while ((next = nextEventNanos()) <= now) {
        model.advanceTo(next, this);
        drainAborts(next);
        loraDue(next);
      }
      model.advanceTo(now, this);
      drainAborts(now);
      loraDue(now);
    } finally {
      advancing = false;
    }
    flushDirty();
  }

  /**
   * Ends a request that has not reached the model yet (it waits for its adapter) as an abort; false
   * if {@code engineId} is not such a request.
   */
  private boolean abortPending(long engineId, long now) {
    LoraGroup pending = loraGroups.get(engineId);
    if (pending == null || pending.submitted) {
      return false;
    }
    metrics.finished(EngineRequest.ABORT);
    loraRequestEnded(engineId, now);
    pending.sink.onFinished(engineId, EngineRequest.ABORT);
    markDirty(pending.sink);
    return true;
  }

  private void drainAborts(long at) {
    for (int i = 0; i < deferredAborts.size(); i++) {
      long id = deferredAborts.get(i);
      if (abortPending(id, at)) {
        continue;
      }
      if (tracked.containsKey(id)) {
        model.abort(id, at, this);
      }
    }
    deferredAborts.clear();
  }

  private void flushDirty() {
    if (dirty.isEmpty()) {
      return;
    }
    Sink last = null;
    for (Sink s : dirty) {
      if (s != last) {
        s.flush();
        last = s;
      }
    }
    dirty.clear();
  }

  private void tick() {
    long late = (System.nanoTime() - startWall) - timerDueWall;
    metrics.clockLag(Math.max(0, late) * timeScale / 1e9, System.nanoTime());
    timer = null;
    timerModelNanos = Long.MAX_VALUE;
    advance(modelNow());
    reschedule();
  }

  private void reschedule() {
    long next = nextEventNanos();
    if (next == Long.MAX_VALUE) {
      if (timer != null) {
        timer.cancel(false);
        timer = null;
        timerModelNanos = Long.MAX_VALUE;
      }
      return;
    }
    if (timer != null) {
      if (timerModelNanos <= next) {
        return;
      }
      timer.cancel(false);
    }
    long dueWall = (long) Math.ceil(next / timeScale);
    long nowWall = System.nanoTime() - startWall;
    long delay = dueWall - nowWall;
    // Coalesce wake-ups: events due within one slack period are handled by one timer. A timer due in
    // the past is already late by that much (the loop was busy): its lag counts from its due time.
    delay = delay <= 0 ? 0 : ((delay + TIMER_SLACK_NANOS - 1) / TIMER_SLACK_NANOS) * TIMER_SLACK_NANOS;
    timerDueWall = delay == 0 ? dueWall : nowWall + delay;
    timerModelNanos = next;
    timer = loop.schedule(this::tick, delay, TimeUnit.NANOSECONDS);
  }

  @Override
  public void onFirstToken(long id, long now, int cachedTokens, long prefillNanos, long queueNanos) {
    Tracked t = tracked.get(id);
    if (t == null) {
      return;
    }
    t.firstToken = now;
    t.scheduled = now - prefillNanos;
    metrics.ttft.observe((now - t.arrival) / 1e9);
    metrics.queue.observe(queueNanos / 1e9);
    metrics.prefill.observe(prefillNanos / 1e9);
    t.sink.onFirstToken(id, cachedTokens);
  }

  @Override
  public void onToken(long id, long now, int index, int tokenId) {
    Tracked t = tracked.get(id);
    if (t == null) {
      return;
    }
    if (index > 0) {
      metrics.itl.observe((now - t.lastToken) / 1e9);
    }
    t.lastToken = now;
    t.tokens = index + 1;
    t.sink.onToken(id, index);
  }

  @Override
  public void onFinished(long id, long now, String reason) {
    Tracked t = tracked.remove(id);
    metrics.finished(reason);
    if (!loraGroups.isEmpty()) {
      loraRequestEnded(id, now);
    }
    if (t == null) {
      return;
    }
    if (!EngineRequest.ABORT.equals(reason)) {
      metrics.e2e.observe((now - t.arrival) / 1e9);
      if (t.firstToken >= 0) {
        metrics.decode.observe((t.lastToken - t.firstToken) / 1e9);
        metrics.inference.observe((now - t.scheduled) / 1e9);
        if (t.tokens > 1) {
          metrics.tpot.observe((t.lastToken - t.firstToken) / 1e9 / (t.tokens - 1));
        }
      }
    }
    t.sink.onFinished(id, reason);
  }

  @Override
  public void onKvEvents(long now, List<KvCacheEvent> events) {
    if (kvEvents != null) {
      kvEvents.publish((startEpochNanos + now / timeScale) / 1e9, events);
    }
  }

  /** Cancels the timers; the model is left as it is. */
  void stop() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }
}
