package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.kvevents.KvEvent;
import dev.kvroute.core.kvevents.KvEventBatch;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/** {@link KvEventIndex}: one {@link PreciseView} per backend beside the wrapped approximate index. */
final class EventPrefixIndex implements KvEventIndex {
  private static final long NONE = Long.MIN_VALUE;

  /** Why a backend is in its mode; a change to a reason that is not quiet is reported once. */
  private enum Reason {
    NOT_CONFIGURED(true),
    NOT_YET(true),
    BLOCK_SIZE(false),
    NEVER_CAME(false),
    STOPPED(false),
    EVENTS(false);

    final boolean quiet;

    Reason(boolean quiet) {
      this.quiet = quiet;
    }
  }

  private final PrefixIndex approximate;
  private final Ticker ticker;
  private final int pageSize;
  private final long ttlNanos;
  private final long staleNanos;
  private final Map<BackendId, State> states = new ConcurrentHashMap<>();
  private volatile ModeListener listener = (b, m, r) -> {};
  /** Runs after each event of a batch is applied, outside the view's lock; a test's hook. */
  private volatile Runnable afterEvent = () -> {};

  /** A backend's precise view, its lock, liveness and counters. */
  private static final class State {
    final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    final PreciseView view;
    volatile boolean enabled;
    volatile long lastEventNanos = NONE;
    /** When the first request routed since the last event was routed, or NONE. */
    final AtomicLong waitingSinceNanos = new AtomicLong(NONE);
    final AtomicReference<Reason> reported = new AtomicReference<>(Reason.NOT_CONFIGURED);
    final AtomicLong batches = new AtomicLong();
    final AtomicLong applied = new AtomicLong();
    final AtomicLong ignored = new AtomicLong();
    final AtomicLong dropped = new AtomicLong();
    final AtomicLong clears = new AtomicLong();
    volatile long lastLagNanos = -1;

    State(int pageSize) {
      view = new PreciseView(pageSize);
    }
  }

  EventPrefixIndex(PrefixIndex approximate, Ticker ticker, Settings settings) {
    this.approximate = Objects.requireNonNull(approximate, "approximate");
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    Objects.requireNonNull(settings, "settings");
    this.pageSize = approximate.pageSizeTokens();
    this.ttlNanos = settings.speculativeTtl().toNanos();
    this.staleNanos = settings.staleAfter().toNanos();
  }

  @Override
  public PrefixIndex approximate() {
    return approximate;
  }

  @Override
  public void addBackend(BackendId backend, long capacityTokens) {
    approximate.addBackend(backend, capacityTokens);
    states.computeIfAbsent(backend, b -> new State(pageSize));
  }

  @Override
  public void removeBackend(BackendId backend) {
    states.remove(backend);
    approximate.removeBackend(backend);
  }

  @Override
  public void forget(BackendId backend) {
    approximate.forget(backend);
    State s = states.get(backend);
    if (s != null) {
      clear(s);
    }
  }

  @Override
  public void enableEvents(BackendId backend) {
    State s = states.get(backend);
    if (s == null) {
      throw new IllegalArgumentException("backend " + backend + ": not registered (expected: addBackend first)");
    }
    s.enabled = true;
    mode(backend, s);
  }

  @Override
  public Applied apply(BackendId backend, KvEventBatch batch, long nowEpochNanos) {
    State s = states.get(backend);
    if (s == null) {
      return new Applied(0, 0, batch.events().size());
    }
    int applied = 0;
    int ignored = 0;
    int dropped = 0;
    if (s.lastEventNanos == NONE) {
      s.lastEventNanos = ticker.nanos(); // the first batch: precise from its first event on
    }
    // The write lock is taken per event, not per batch: a step's batch can store the blocks of
    // several ~14K-token prompts, and routing (the read lock) must not wait for all of them.
    for (KvEvent e : batch.events()) {
      PreciseView.Outcome outcome;
      s.lock.writeLock().lock();
      try {
        outcome = s.view.apply(e);
      } finally {
        s.lock.writeLock().unlock();
      }
      switch (outcome) {
        case APPLIED -> applied++;
        case IGNORED -> ignored++;
        case DROPPED -> dropped++;
      }
      if (e instanceof KvEvent.AllBlocksCleared) {
        s.clears.incrementAndGet();
      }
      afterEvent.run();
    }
    s.batches.incrementAndGet();
    s.applied.addAndGet(applied);
    s.ignored.addAndGet(ignored);
    s.dropped.addAndGet(dropped);
    s.lastLagNanos = Math.max(0, nowEpochNanos - (long) (batch.ts() * 1e9));
    s.lastEventNanos = ticker.nanos();
    s.waitingSinceNanos.set(NONE);
    mode(backend, s);
    return new Applied(applied, ignored, dropped);
  }

  @Override
  public void lostEvents(BackendId backend, String reason) {
    State s = states.get(backend);
    if (s != null) {
      clear(s);
    }
  }

  private void clear(State s) {
    s.lock.writeLock().lock();
    try {
      s.view.clear();
    } finally {
      s.lock.writeLock().unlock();
    }
    s.clears.incrementAndGet();
  }

  @Override
  public Mode mode(BackendId backend) {
    State s = states.get(backend);
    return s == null ? Mode.APPROXIMATE : mode(backend, s);
  }

  private Mode mode(BackendId backend, State s) {
    Reason reason;
    String why;
    long waiting = s.waitingSinceNanos.get();
    boolean stale = waiting != NONE && ticker.nanos() - waiting > staleNanos;
    long staleMillis = staleNanos / 1_000_000;
    String window = staleMillis % 1000 == 0 ? staleMillis / 1000 + " s" : staleMillis + " ms";
    if (!s.enabled) {
      reason = Reason.NOT_CONFIGURED;
      why = "no events configured";
    } else if (s.view.unusableBlockSize() != 0) {
      reason = Reason.BLOCK_SIZE;
      why = "engine block size " + s.view.unusableBlockSize() + " is not a multiple of the page size " + pageSize;
    } else if (s.lastEventNanos == NONE && stale) {
      reason = Reason.NEVER_CAME;
      why = "no KV event since subscribing, " + window + " after a request was routed to it: is its kvEvents "
          + "endpoint the engine's?";
    } else if (s.lastEventNanos == NONE) {
      reason = Reason.NOT_YET;
      why = "no events yet";
    } else if (stale) {
      reason = Reason.STOPPED;
      why = "events stopped: none for " + window + " while requests were routed to it";
    } else {
      reason = Reason.EVENTS;
      why = "events arriving";
    }
    Reason before = s.reported.get();
    if (reason == Reason.EVENTS && before == Reason.STOPPED) {
      why = "events resumed";
    }
    if (before != reason && s.reported.compareAndSet(before, reason) && !reason.quiet) {
      listener.changed(backend, reason == Reason.EVENTS ? Mode.PRECISE : Mode.APPROXIMATE, why);
    }
    return reason == Reason.EVENTS ? Mode.PRECISE : Mode.APPROXIMATE;
  }

  @Override
  public ViewStats stats(BackendId backend) {
    State s = states.get(backend);
    if (s == null) {
      return null;
    }
    s.lock.readLock().lock();
    try {
      return new ViewStats(s.batches.get(), s.applied.get(), s.ignored.get(), s.dropped.get(),
          s.clears.get(), s.view.blockCount(), s.view.speculativeCount(), s.view.orphanBlocks(),
          s.lastLagNanos, mode(backend, s));
    } finally {
      s.lock.readLock().unlock();
    }
  }

  /** Sets what runs after each applied event, outside the lock (tests: a batch paused mid-way). */
  void afterEachEvent(Runnable hook) {
    this.afterEvent = Objects.requireNonNull(hook, "hook");
  }

  @Override
  public void onModeChange(ModeListener listener) {
    this.listener = Objects.requireNonNull(listener, "listener");
  }

  /** A prompt prepared for both views: the approximate index's, and the router's page keys. */
  private static final class EventPrompt implements Prompt {
    final Prompt inner;
    final int pageSize;
    private long[] keys;

    EventPrompt(Prompt inner, int pageSize) {
      this.inner = inner;
      this.pageSize = pageSize;
    }

    @Override
    public int[] tokens() {
      return inner.tokens();
    }

    @Override
    public int length() {
      return inner.length();
    }

    @Override
    public long namespace() {
      return inner.namespace();
    }

    /** The router's page keys, chained from the prompt's namespace root as the view roots events. */
    long[] keys() {
      if (keys == null) {
        int[] tokens = inner.tokens();
        long[] k = new long[tokens.length / pageSize];
        long parent = PageHash.root(inner.namespace());
        for (int d = 0; d < k.length; d++) {
          parent = PageHash.next(parent, tokens, d * pageSize, pageSize);
          k[d] = parent;
        }
        keys = k;
      }
      return keys;
    }
  }

  private EventPrompt prepared(Prompt prompt) {
    if (prompt instanceof EventPrompt p && p.pageSize == pageSize) {
      return p;
    }
    return new EventPrompt(approximate.prompt(prompt.tokens(), prompt.namespace()), pageSize);
  }

  @Override
  public Prompt prompt(int[] tokens) {
    return new EventPrompt(approximate.prompt(tokens), pageSize);
  }

  @Override
  public Prompt prompt(int[] tokens, long namespace) {
    return new EventPrompt(approximate.prompt(tokens, namespace), pageSize);
  }

  @Override
  public PrefixMatch match(int[] tokens) {
    return match(prompt(tokens));
  }

  @Override
  public PrefixMatch match(Prompt prompt) {
    EventPrompt p = prepared(prompt);
    Map<BackendId, Integer> matched = new HashMap<>();
    PrefixMatch approx = null;
    long now = ticker.nanos();
    for (Map.Entry<BackendId, State> e : states.entrySet()) {
      BackendId b = e.getKey();
      State s = e.getValue();
      if (mode(b, s) == Mode.PRECISE) {
        s.lock.readLock().lock();
        try {
          matched.put(b, s.view.matchPages(p.keys(), now) * pageSize);
        } finally {
          s.lock.readLock().unlock();
        }
      } else {
        if (approx == null) {
          approx = approximate.match(p.inner);
        }
        matched.put(b, approx.matched(b));
      }
    }
    return new PrefixMatch(p.length(), matched);
  }

  @Override
  public void insert(BackendId backend, int[] tokens) {
    insert(backend, prompt(tokens));
  }

  @Override
  public void insert(BackendId backend, Prompt prompt) {
    EventPrompt p = prepared(prompt);
    approximate.insert(backend, p.inner);
    routed(backend, p);
  }

  @Override
  public Pin insertAndPin(BackendId backend, Prompt prompt) {
    EventPrompt p = prepared(prompt);
    Pin pin = approximate.insertAndPin(backend, p.inner);
    routed(backend, p);
    return pin;
  }

  /** A prompt went to {@code backend}: speculate its pages and start waiting for its events. */
  private void routed(BackendId backend, EventPrompt p) {
    State s = states.get(backend);
    if (s == null || !s.enabled) {
      return;
    }
    long now = ticker.nanos();
    s.waitingSinceNanos.compareAndSet(NONE, now);
    if (ttlNanos > 0) {
      long[] keys = p.keys();
      s.lock.writeLock().lock();
      try {
        s.view.speculate(keys, now, now + ttlNanos);
      } finally {
        s.lock.writeLock().unlock();
      }
    }
  }

  @Override
  public long sizeTokens(BackendId backend) {
    State s = states.get(backend);
    if (s != null && mode(backend, s) == Mode.PRECISE) {
      s.lock.readLock().lock();
      try {
        return (long) s.view.pageCount() * pageSize;
      } finally {
        s.lock.readLock().unlock();
      }
    }
    return approximate.sizeTokens(backend);
  }

  @Override
  public long estimatedBytes() {
    long bytes = approximate.estimatedBytes();
    for (State s : states.values()) {
      s.lock.readLock().lock();
      try {
        bytes += s.view.estimatedBytes();
      } finally {
        s.lock.readLock().unlock();
      }
    }
    return bytes;
  }

  @Override
  public int pageSizeTokens() {
    return pageSize;
  }

  @Override
  public void checkInvariants() {
    approximate.checkInvariants();
    for (State s : states.values()) {
      s.lock.readLock().lock();
      try {
        s.view.checkInvariants();
      } finally {
        s.lock.readLock().unlock();
      }
    }
  }

  @Override
  public String toString() {
    return "EventPrefixIndex[pageSize=" + pageSize + ", backends=" + states.keySet() + "]";
  }
}
