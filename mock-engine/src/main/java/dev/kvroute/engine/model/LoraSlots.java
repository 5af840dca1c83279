package dev.kvroute.engine.model;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The engine's LoRA adapter slots, in model time: at most {@code maxLoras} adapters are active (held
 * in the GPU's LoRA slots, vLLM's {@code --max-loras}) at once, and an adapter that is not active must
 * be loaded first, which takes {@code loadNanos} of model time: a cold adapter delays its first
 * request. An active adapter with no request in flight may be evicted (least recently used first) to
 * make room; when every slot holds an adapter with requests in flight, a request for another adapter
 * waits until one of them is idle (vLLM keeps such requests in its waiting queue, reported as
 * {@code waiting_lora_adapters} of {@code vllm:lora_requests_info}).
 *
 * <p>Usage: {@link #acquire} when a request arrives (its returned time is when it may start, or
 * {@code -1}: call again after a {@link #release}); {@link #release} exactly once for each successful
 * acquire, when the request ends.
 *
 * <p>Not thread-safe: owned by one engine's thread.
 */
public final class LoraSlots {
  private static final class Slot {
    final String name;
    long readyNanos;
    long lastUsedNanos;
    int inFlight;

    Slot(String name, long readyNanos) {
      this.name = name;
      this.readyNanos = readyNanos;
      this.lastUsedNanos = readyNanos;
    }
  }

  private final int maxLoras;
  private final long loadNanos;
  private final Map<String, Slot> active = new LinkedHashMap<>();
  private long loads;
  private long requests;
  private long slotWaits;
  private long slotWaitNanos;
  private long loadWaits;
  private long loadWaitNanos;

  /**
   * What the slots did since start, in model time: every engine (the mock's, the simulator's) counts
   * the same way, so a real run and a simulated one can be compared adapter load by adapter load.
   *
   * @param requests requests that acquired a slot use (a generation request with several choices is one)
   * @param loads adapter loads (cold starts)
   * @param slotWaits requests that waited for a slot (every slot busy with other adapters' requests)
   * @param slotWaitNanos their model time from arrival to getting a slot
   * @param loadWaits requests that waited for their adapter to load (theirs or one already loading)
   * @param loadWaitNanos their model time from getting the slot to the adapter being active
   */
  public record Stats(
      long requests, long loads, long slotWaits, long slotWaitNanos, long loadWaits, long loadWaitNanos) {
    public static final Stats ZERO = new Stats(0, 0, 0, 0, 0, 0);

    /** The sum of this and {@code o}. */
    public Stats plus(Stats o) {
      return new Stats(requests + o.requests, loads + o.loads, slotWaits + o.slotWaits,
          slotWaitNanos + o.slotWaitNanos, loadWaits + o.loadWaits, loadWaitNanos + o.loadWaitNanos);
    }
  }

  /**
   * @param maxLoras adapters active at once, {@code >= 1}
   * @param loadNanos model time to load an adapter into a slot, {@code >= 0}
   * @throws IllegalArgumentException if a value is out of range
   */
  public LoraSlots(int maxLoras, long loadNanos) {
    if (maxLoras < 1) {
      throw new IllegalArgumentException("maxLoras: " + maxLoras + " (expected: >= 1)");
    }
    if (loadNanos < 0) {
      throw new IllegalArgumentException("loadNanos: " + loadNanos + " (expected: >= 0)");
    }
    this.maxLoras = maxLoras;
    this.loadNanos = loadNanos;
  }

  /**
   * A request for {@code adapter} arrives at {@code nowNanos}: returns the model time at which the
   * adapter is active for it ({@code nowNanos} when already loaded, later while it loads), having
   * counted the request in flight; or {@code -1} when every slot is busy with another adapter's
   * requests (nothing counted: ask again after a release).
   */
  public long acquire(String adapter, long nowNanos) {
    return acquire(adapter, nowNanos, nowNanos);
  }

  /**
   * As {@link #acquire(String, long)} for a request that arrived at {@code arrivalNanos} ({@code <=
   * nowNanos}; earlier when it waited for a slot): a successful acquire counts its slot wait and load
   * wait in {@link #stats()}.
   */
  public long acquire(String adapter, long arrivalNanos, long nowNanos) {
    long ready = take(adapter, nowNanos);
    if (ready >= 0) {
      requests++;
      if (nowNanos > arrivalNanos) {
        slotWaits++;
        slotWaitNanos += nowNanos - arrivalNanos;
      }
      if (ready > nowNanos) {
        loadWaits++;
        loadWaitNanos += ready - nowNanos;
      }
    }
    return ready;
  }

  private long take(String adapter, long nowNanos) {
    Objects.requireNonNull(adapter, "adapter");
    Slot s = active.get(adapter);
    if (s == null) {
      if (active.size() >= maxLoras) {
        Slot victim = active.values().stream()
            .filter(x -> x.inFlight == 0)
            .min(Comparator.comparingLong((Slot x) -> x.lastUsedNanos))
            .orElse(null);
        if (victim == null) {
          return -1;
        }
        active.remove(victim.name);
      }
      s = new Slot(adapter, nowNanos + loadNanos);
      active.put(adapter, s);
      loads++;
    }
    s.inFlight++;
    s.lastUsedNanos = Math.max(nowNanos, s.lastUsedNanos);
    return Math.max(nowNanos, s.readyNanos);
  }

  /**
   * A request counted by {@link #acquire} for {@code adapter} ended at {@code nowNanos}.
   *
   * @throws IllegalStateException if no request of {@code adapter} is in flight
   */
  public void release(String adapter, long nowNanos) {
    Slot s = active.get(adapter);
    if (s == null || s.inFlight == 0) {
      throw new IllegalStateException("release of adapter " + adapter + " with no request in flight");
    }
    s.inFlight--;
    s.lastUsedNanos = Math.max(nowNanos, s.lastUsedNanos);
  }

  /** Drops {@code adapter} from its slot (it was unloaded); its requests in flight keep running. */
  public void unload(String adapter) {
    Slot s = active.get(adapter);
    if (s != null && s.inFlight == 0) {
      active.remove(adapter);
    }
  }

  /** Whether {@code adapter} is in a slot now (loaded or loading). */
  public boolean isActive(String adapter) {
    return active.containsKey(adapter);
  }

  /** Adapters with requests in flight, in the order they were loaded. */
  public List<String> running() {
    List<String> out = new ArrayList<>();
    for (Slot s : active.values()) {
      if (s.inFlight > 0) {
        out.add(s.name);
      }
    }
    return out;
  }

  /** Adapters in a slot, busy or idle, in the order they were loaded. */
  public List<String> activeAdapters() {
    return List.copyOf(active.keySet());
  }

  /** What the slots did since start. */
  public Stats stats() {
    return new Stats(requests, loads, slotWaits, slotWaitNanos, loadWaits, loadWaitNanos);
  }

  /** Adapter loads so far (each cold start). */
  public long loads() {
    return loads;
  }

  public int maxLoras() {
    return maxLoras;
  }
}
