package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.load.BackendLoad;
import dev.kvroute.core.load.EngineLoad;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * The backends the router currently routes to, added from configuration or the admin API. Adding a
 * backend registers it with router-core (index view and capacity) and with the metrics; removing
 * it drops its index view at once, closes its idle pooled connections and unregisters its gauges.
 * Requests already in flight on a removed backend finish normally.
 *
 * <p>Thread-safe: mutations are synchronized; reads see an immutable snapshot.
 */
final class BackendRegistry {
  private final ProxyConfig config;
  private final RouterCore core;
  private final ProxyMetrics metrics;
  private final Ticker ticker;
  private final Map<BackendId, Backend> byId = new ConcurrentHashMap<>();
  private final AtomicInteger passthroughCursor = new AtomicInteger();
  /** Backends whose circuit is open (each reserved through {@link #tryEject}). */
  private final AtomicInteger ejected = new AtomicInteger();
  private volatile List<Backend> snapshot = List.of();
  private volatile Consumer<BackendId> onRemoved = id -> {};
  private volatile Consumer<Backend> onAdded = b -> {};

  BackendRegistry(ProxyConfig config, RouterCore core, ProxyMetrics metrics, Ticker ticker) {
    this.config = config;
    this.core = core;
    this.metrics = metrics;
    this.ticker = ticker;
  }

  /** Hooks run after a backend is added (first health probe) and removed (pool eviction). */
  void hooks(Consumer<Backend> onAdded, Consumer<BackendId> onRemoved) {
    this.onAdded = onAdded;
    this.onRemoved = onRemoved;
  }

  /**
   * Adds a backend.
   *
   * @throws IllegalArgumentException if a backend with the same name exists
   */
  Backend add(BackendConfig cfg) {
    Backend b;
    synchronized (this) {
      BackendId id = BackendId.of(cfg.name());
      if (byId.containsKey(id)) {
        throw new IllegalArgumentException("name: " + cfg.name() + " (expected: a name not already in use)");
      }
      for (Backend other : snapshot) {
        if (sameEngine(other.config().url(), cfg.url())) {
          throw new IllegalArgumentException("url: " + cfg.url() + " is already backend " + other.id().name()
              + " (expected: a URL not already in use)");
        }
      }
      long capacity = cfg.capacityTokens() > 0 ? cfg.capacityTokens() : config.routing().defaultCapacityTokens();
      CircuitBreaker breaker = new CircuitBreaker(config.circuitBreaker(), ticker,
          (from, to) -> {
            if (from == CircuitBreaker.State.OPEN) {
              ejected.decrementAndGet();
            }
            metrics.circuitTransition(id, to);
          },
          this::tryEject);
      b = new Backend(cfg, breaker, capacity);
      core.addBackend(id, capacity);
      byId.put(id, b);
      List<Backend> next = new ArrayList<>(snapshot);
      next.add(b);
      snapshot = List.copyOf(next);
      metrics.addBackend(b, core);
    }
    try {
      onAdded.accept(b);
    } catch (RuntimeException e) {
      // the first probe could not start; the periodic probes retry, and the backend is registered
      System.getLogger(BackendRegistry.class.getName()).log(System.Logger.Level.WARNING,
          "backend " + b.id() + ": first probe failed to start: " + e);
    }
    return b;
  }

  /** Whether two backend URLs name the same engine: same host (any case), port and path (a trailing '/' aside). */
  private static boolean sameEngine(java.net.URI a, java.net.URI b) {
    return a.getHost().equalsIgnoreCase(b.getHost())
        && BackendConfig.port(a) == BackendConfig.port(b)
        && stripSlash(a.getRawPath()).equals(stripSlash(b.getRawPath()));
  }

  private static String stripSlash(String path) {
    return path == null ? "" : path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
  }

  /** Removes {@code id}; returns the removed backend, or {@code null} if there was none. */
  Backend remove(BackendId id) {
    Backend b;
    synchronized (this) {
      b = byId.remove(id);
      if (b == null) {
        return null;
      }
      b.markRemoved();
      if (b.breaker().state() == CircuitBreaker.State.OPEN) {
        ejected.decrementAndGet();
      }
      List<Backend> next = new ArrayList<>(snapshot);
      next.remove(b);
      snapshot = List.copyOf(next);
      core.removeBackend(id);
      metrics.removeBackend(id);
    }
    onRemoved.accept(id);
    return b;
  }

  /** {@code b}'s engine restarted (or may have): its cache is empty, so its index view is dropped. */
  void cacheLost(Backend b) {
    synchronized (this) {
      if (b.removed()) {
        return;
      }
      core.index().forget(b.id());
    }
  }

  /** The router's own load on {@code b} now (sent along with an engine-load scrape). */
  BackendLoad load(Backend b) {
    return core.loads().load(b.id());
  }

  /**
   * What {@code b}'s engine reported of its load ({@code null}: the scrape failed or had no load
   * gauges, so the last report is dropped); {@code asked} is the router's own load when it was sent.
   */
  void engineLoad(Backend b, EngineLoad reported, BackendLoad asked) {
    synchronized (this) {
      // under the lock remove() holds, so a report never re-creates a removed backend's counters
      if (b.removed()) {
        return;
      }
      b.engineLoad(reported);
      if (reported == null) {
        core.loads().clearEngine(b.id());
      } else {
        core.loads().reportEngine(b.id(), reported, asked);
      }
    }
  }

  /** Updates the KV capacity of {@code b} (read from its engine) in the index. */
  void capacityDiscovered(Backend b, long capacityTokens) {
    synchronized (this) {
      if (b.removed()) {
        return;
      }
      b.capacityDiscovered(capacityTokens);
      core.addBackend(b.id(), capacityTokens);
    }
  }

  /**
   * Sets whether {@code id} drains (takes no new request; those in flight finish); returns whether
   * the backend exists and its state changed.
   */
  boolean draining(BackendId id, boolean draining) {
    Backend b = byId.get(id);
    if (b == null || b.draining() == draining) {
      return false;
    }
    b.draining(draining);
    return true;
  }

  Backend get(BackendId id) {
    return byId.get(id);
  }

  /** Every backend, in the order added. */
  List<Backend> all() {
    return snapshot;
  }

  /** Backends that may take a request now (healthy, circuit admitting), minus {@code exclude}. */
  List<Backend> routable(Collection<BackendId> exclude) {
    List<Backend> all = snapshot;
    List<Backend> out = new ArrayList<>(all.size());
    for (int i = 0; i < all.size(); i++) { // indexed: the immutable list's iterator is an allocation per request
      Backend b = all.get(i);
      if (!exclude.contains(b.id()) && b.routable()) {
        out.add(b);
      }
    }
    return out;
  }

  /**
   * Reserves an ejection (an open circuit) if fewer than {@code circuitBreaker.maxEjectionPercent} of
   * the backends are ejected; one ejection is always allowed.
   */
  private boolean tryEject() {
    int max = Math.max(1, snapshot.size() * config.circuitBreaker().maxEjectionPercent() / 100);
    while (true) {
      int now = ejected.get();
      if (now >= max) {
        return false;
      }
      if (ejected.compareAndSet(now, now + 1)) {
        return true;
      }
    }
  }

  /** Backends whose circuit is open now. */
  int ejected() {
    return ejected.get();
  }

  /**
   * Whether the router can serve at all: at least one backend passes its health probe. Open circuits
   * and saturated engines do not count: a fleet that is momentarily busy is still ready (its
   * requests queue or get 429), and taking the router out of its Service would turn it into an outage.
   */
  boolean anyHealthy() {
    for (Backend b : snapshot) {
      if (b.healthy() && !b.removed()) {
        return true;
      }
    }
    return false;
  }

  /** Whether at least one backend may take a request now. */
  boolean anyRoutable() {
    for (Backend b : snapshot) {
      if (b.routable()) {
        return true;
      }
    }
    return false;
  }

  /** Round-robin pick among {@code candidates} for requests routed without the policy (pass-through). */
  Backend pickPassthrough(List<Backend> candidates) {
    return candidates.get(Math.floorMod(passthroughCursor.getAndIncrement(), candidates.size()));
  }
}
