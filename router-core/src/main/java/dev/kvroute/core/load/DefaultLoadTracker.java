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
    return new BackendLoad(
        inFlight,
        c.prefillTokens.get(),
        prefilling,
        Math.max(0, inFlight - prefilling),
        c.externalQueue,
        c.externalKv);
  }

  @Override
  public void reportExternal(BackendId backend, int queueLength, double kvUsage) {
    Counters c = counters.computeIfAbsent(backend, b -> new Counters());
    c.externalQueue = queueLength;
    c.externalKv = kvUsage;
  }

  @Override
  public void remove(BackendId backend) {
    counters.remove(backend);
  }

  private static final class Counters {
    final AtomicInteger inFlight = new AtomicInteger();
    final AtomicInteger prefilling = new AtomicInteger();
    final AtomicLong prefillTokens = new AtomicLong();
    volatile int externalQueue = -1;
    volatile double externalKv = -1;
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
