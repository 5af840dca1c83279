package dev.kvroute.core.load;

import dev.kvroute.core.BackendId;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** Lock-free {@link LoadTracker} on per-backend atomic counters. */
final class DefaultLoadTracker implements LoadTracker {
  private final ConcurrentHashMap<BackendId, Counters> counters = new ConcurrentHashMap<>();

  @Override
  public Lease acquire(BackendId backend, long uncachedPromptTokens) {
    Counters c = counters.computeIfAbsent(backend, b -> new Counters());
    c.inFlight.incrementAndGet();
    c.prefilling.incrementAndGet();
    c.prefillTokens.addAndGet(uncachedPromptTokens);
    return new CountedLease(c, uncachedPromptTokens);
  }

  @Override
  public BackendLoad load(BackendId backend) {
    Counters c = counters.get(backend);
    if (c == null) {
      return BackendLoad.IDLE;
    }
    int inFlight = c.inFlight.get();
    int prefilling = c.prefilling.get();
    Foreign f = c.foreign;
    return new BackendLoad(
        inFlight,
        c.prefillTokens.get(),
        prefilling,
        Math.max(0, inFlight - prefilling),
        f.requests,
        f.waiting,
        f.kvUsage);
  }

  @Override
  public void reportEngine(BackendId backend, EngineLoad engine, BackendLoad ownWhenAsked) {
    Counters c = counters.computeIfAbsent(backend, b -> new Counters());
    int ownInFlight = Math.max(ownWhenAsked.inFlightRequests(), c.inFlight.get());
    int ownPrefilling = Math.max(ownWhenAsked.prefillingRequests(), c.prefilling.get());
    long total = (long) engine.running() + engine.waiting();
    c.foreign = new Foreign(
        (int) Math.min(Integer.MAX_VALUE, Math.max(0, total - ownInFlight)),
        Math.max(0, engine.waiting() - ownPrefilling),
        engine.kvUsage());
  }

  @Override
  public void clearEngine(BackendId backend) {
    Counters c = counters.get(backend);
    if (c != null) {
      c.foreign = Foreign.NONE;
    }
  }

  @Override
  public void remove(BackendId backend) {
    counters.remove(backend);
  }

  private static final class Counters {
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger prefilling = new AtomicInteger();
    final AtomicLong prefillTokens = new AtomicLong();
    volatile Foreign foreign = Foreign.NONE;
  }

  /** The last engine report, as foreign counts (published whole, so a reader never sees half of one). */
  private record Foreign(int requests, int waiting, double kvUsage) {
    static final Foreign NONE = new Foreign(0, 0, -1);
  }

  private static final class CountedLease implements Lease {
    private static final int ACTIVE = 0;
    private static final int DECODING = 1;
    private static final int RELEASED = 2;

    private final Counters c;
    private final long prefillTokens;
    private final AtomicInteger state = new AtomicInteger(ACTIVE);

    CountedLease(Counters c, long prefillTokens) {
      this.c = c;
      this.prefillTokens = prefillTokens;
    }

    @Override
    public void firstToken() {
      if (state.compareAndSet(ACTIVE, DECODING)) {
        c.prefilling.decrementAndGet();
        c.prefillTokens.addAndGet(-prefillTokens);
      }
    }

    @Override
    public boolean release() {
      int prev = state.getAndSet(RELEASED);
      if (prev == RELEASED) {
        return false;
      }
      if (prev == ACTIVE) {
        c.prefilling.decrementAndGet();
        c.prefillTokens.addAndGet(-prefillTokens);
      }
      c.inFlight.decrementAndGet();
      return true;
    }
  }
}
