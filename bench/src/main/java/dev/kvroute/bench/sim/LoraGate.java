package dev.kvroute.bench.sim;

import dev.kvroute.engine.model.EngineListener;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import dev.kvroute.engine.model.LoraSlots;
import dev.kvroute.proxy.LoraAffinity;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Set;

/**
 * One simulated engine's LoRA adapter slots in virtual time, as the mock engine's driver applies them
 * in wall time: a request run with an adapter reaches the engine model once its adapter is active
 * (at once when it is, after {@code loadNanos} when a slot is free or idle, else once a slot frees
 * up, in arrival order); base-model requests go straight to the model. The TTFT of a delayed request
 * counts from its send, so a cold adapter delays its first request.
 *
 * <p>Not thread-safe: one simulation thread owns it.
 */
final class LoraGate {
  private record Pending(long readyNanos, long seq, EngineRequest request) {}

  private record Waiting(EngineRequest request, long arrivalNanos) {}

  private final EngineModel engine;
  private final LoraSlots slots;
  private final PriorityQueue<Pending> pending =
      new PriorityQueue<>(Comparator.comparingLong(Pending::readyNanos).thenComparingLong(Pending::seq));
  private final ArrayDeque<Waiting> waiting = new ArrayDeque<>();
  private long nextSeq;
  /** The state the router last read ({@link #scrape}), or null when it reads the live state. */
  private LoraAffinity.State reported;

  LoraGate(EngineModel engine, LoraSlots slots) {
    this.engine = engine;
    this.slots = slots;
  }

  /** Submits {@code r}, arriving at {@code nowNanos} (the engine has been advanced to it). */
  void submit(EngineRequest r, long nowNanos) {
    if (r.loraName() == null) {
      engine.submit(r, nowNanos);
      return;
    }
    if (!start(r, nowNanos, nowNanos)) {
      waiting.add(new Waiting(r, nowNanos));
    }
  }

  private boolean start(EngineRequest r, long arrivalNanos, long nowNanos) {
    long ready = slots.acquire(r.loraName(), arrivalNanos, nowNanos);
    if (ready < 0) {
      return false;
    }
    pending.add(new Pending(ready, nextSeq++, r));
    return true;
  }

  /** Model time of the next request whose adapter became active, or {@link Long#MAX_VALUE}. */
  long nextEventNanos() {
    Pending p = pending.peek();
    return p == null ? Long.MAX_VALUE : p.readyNanos();
  }

  /** Advances the engine to {@code nowNanos} and submits the requests whose adapter is active by then. */
  void advanceTo(long nowNanos, EngineListener listener) {
    engine.advanceTo(nowNanos, listener);
    while (!pending.isEmpty() && pending.peek().readyNanos() <= nowNanos) {
      engine.submit(pending.poll().request(), nowNanos);
    }
  }

  /**
   * A request run with {@code adapter} ({@code null}: the base model, nothing to do) finished at
   * {@code nowNanos} (called from the engine's listener, mid-advance): frees its adapter's use and
   * gives free slots to waiting requests, which reach the model on the next {@link #advanceTo}.
   */
  void finished(String adapter, long nowNanos) {
    if (adapter == null) {
      return;
    }
    slots.release(adapter, nowNanos);
    while (!waiting.isEmpty() && start(waiting.peek().request(), waiting.peek().arrivalNanos(), nowNanos)) {
      waiting.poll();
    }
  }

  /**
   * The adapter state the engine would report in {@code vllm:lora_requests_info}: running adapters
   * (those with requests in flight, loading ones included), waiting adapters and its slot count.
   */
  LoraAffinity.State state() {
    Set<String> waitingNames = new LinkedHashSet<>();
    for (Waiting w : waiting) {
      waitingNames.add(w.request().loraName());
    }
    return new LoraAffinity.State(Set.copyOf(slots.running()), Set.copyOf(waitingNames), slots.maxLoras());
  }

  /**
   * The router reads the state now, as the proxy's engine-load scrape reads {@code
   * vllm:lora_requests_info}: {@link #reported()} returns it until the next scrape.
   */
  void scrape() {
    reported = state();
  }

  /**
   * What the router knows of the adapter state: the last {@link #scrape} (what nothing was scraped
   * yet reads as {@link LoraAffinity.State#UNKNOWN}, as in the proxy before its first scrape) when the
   * simulation models the scrape, else the live {@link #state()}.
   */
  LoraAffinity.State reported(boolean scraped) {
    if (!scraped) {
      return state();
    }
    return reported == null ? LoraAffinity.State.UNKNOWN : reported;
  }

  /** Adapter loads so far. */
  long loads() {
    return slots.loads();
  }

  /** What the slots did so far (loads, slot and load waits), counted as the mock engine counts them. */
  LoraSlots.Stats slotStats() {
    return slots.stats();
  }

  /**
   * The engine model's stats with the requests held here, as the mock engine reports them: those
   * waiting for a slot as waiting, those whose adapter loads as running ({@link
   * dev.kvroute.engine.model.EngineStats#plusNotYetInModel}).
   */
  dev.kvroute.engine.model.EngineStats stats() {
    return engine.stats().plusNotYetInModel(pending.size(), waiting.size());
  }

  /** Requests waiting for a slot now (for tests). */
  List<EngineRequest> waiting() {
    List<EngineRequest> out = new ArrayList<>();
    for (Waiting w : waiting) {
      out.add(w.request());
    }
    return out;
  }
}
