package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.request.RequestView;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * A routing core that records the thread of every {@code route(view, namespace, healthy)} and holds
 * a body worker's routing (a thread named {@code kvroute-body...}) until {@code release} counts down
 * (20 s at most) whenever {@code hold} says so: how the integration tests keep the body workers busy
 * while they watch what the event loop does meanwhile.
 */
class BodyWorkerHold extends ForwardingRouterCore {
  private final List<String> threads;
  private final BooleanSupplier hold;
  private final CountDownLatch release;

  /**
   * @param threads where each routing's thread name is added, in order
   * @param hold asked on a body worker's routing: whether to hold it (may count what it holds)
   * @param release what a held routing waits for
   */
  BodyWorkerHold(RouterCore core, List<String> threads, BooleanSupplier hold, CountDownLatch release) {
    super(core);
    this.threads = threads;
    this.hold = hold;
    this.release = release;
  }

  @Override
  public Routed route(RequestView view, long namespace, Collection<BackendId> healthy) {
    String thread = Thread.currentThread().getName();
    threads.add(thread);
    if (thread.startsWith("kvroute-body") && hold.getAsBoolean()) {
      try {
        release.await(20, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    return core.route(view, namespace, healthy);
  }

  @Override
  public Routed route(RequestView view, Collection<BackendId> healthy) {
    return route(view, 0L, healthy);
  }
}
