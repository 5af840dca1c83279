package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.request.RequestView;
import io.netty.channel.EventLoop;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * Runs a large prompt's prefix-index work on the proxy's body workers instead of an event loop: the
 * routing ({@link RouterCore#route(int[], String, java.util.Collection)}: one match descent and one
 * insert-and-pin, each O(pages of the prompt)) and, through the routed request's lease, the pin's
 * confirmation at the first token and its release or abandonment at the end (each a walk of the
 * prompt's pages, or a trim of the evicted ones). A prompt is large when its body was (at least
 * {@link ProxyHandler#OFFLOAD_BODY_BYTES}, so it was also parsed and tokenized off the loop): a
 * million-token prompt's index work is tens of milliseconds, which would hold up every other
 * connection of its event loop. The result comes back on the exchange's event loop.
 *
 * <p>Also a smaller prompt with much text to encode afresh ({@link RouterCore#uncachedCodePoints} at
 * least {@link ProxyHandler#COLD_TEXT_CODE_POINTS}: a new conversation's first turn, a long paste):
 * its whole routing, tokenizing included, runs on the workers; encoding 20 KB of new text takes a
 * few milliseconds, which every other connection of the loop would otherwise wait.
 *
 * <p>When the workers' queue is full, routing is refused (the caller answers 503, or routes a cold
 * prompt on the loop after all) and the lease operations run on the calling thread rather than
 * being lost.
 *
 * <p>Thread-safe (stateless; the lease it wraps is thread-safe).
 */
final class OffLoopRouting {
  private static final System.Logger LOG = System.getLogger(OffLoopRouting.class.getName());
  /**
   * A body worker's task that holds something of a request (its body) until it runs: when the
   * router closes with it still queued ({@code ThreadPoolExecutor.shutdownNow} returns it), {@link
   * #dropped} gives that back instead.
   */
  interface Droppable extends Runnable {
    /** Releases what the task holds, without doing its work. */
    void dropped();
  }

  /** Where the routing outcome goes, on the event loop: the routed request, or why it failed. */
  interface Then {
    void routed(RouterCore.Routed routed, RuntimeException failure);
  }

  private OffLoopRouting() {}

  /**
   * Routes {@code promptTokens} on {@code px}'s body workers, then calls {@code then} on
   * {@code loop} with a routed request whose lease also runs its index work on the workers.
   * Returns {@code false}, having done nothing, if the workers refused the task.
   */
  static boolean route(ProxyContext px, EventLoop loop, int[] promptTokens, String sessionKey,
      List<BackendId> healthy, Then then) {
    return route(px, loop, promptTokens, sessionKey, 0L, healthy, then);
  }

  /** As above, in the prefix-index {@code namespace} of the request's model and adapter. */
  static boolean route(ProxyContext px, EventLoop loop, int[] promptTokens, String sessionKey, long namespace,
      List<BackendId> healthy, Then then) {
    Executor workers = px.bodyWorkers();
    return run(workers, loop, () -> {
      RouterCore.Routed r = px.core().route(promptTokens, sessionKey, namespace, healthy);
      return new Routed(r, new OffLoopLease(r.lease(), workers));
    }, () -> { }, then);
  }

  /**
   * Routes {@code view} ({@link RouterCore#route(RequestView, long, java.util.Collection)}: its
   * tokenizing, the match and the insert-and-pin) on {@code px}'s body workers, for a prompt with
   * much text to encode afresh ({@link RouterCore#uncachedCodePoints}); then runs {@code after} and
   * calls {@code then} on {@code loop}. The lease stays the core's own: such a prompt's body is under
   * {@link ProxyHandler#OFFLOAD_BODY_BYTES}, so its pin walks are short. {@code after} runs exactly
   * once, on {@code loop} or (when the loop has shut down) on the worker; the caller keeps what the
   * view reads (the request body) until then. Returns {@code false}, having done nothing (and not
   * run {@code after}), if the workers refused the task.
   */
  static boolean route(ProxyContext px, EventLoop loop, RequestView view, long namespace, List<BackendId> healthy,
      Runnable after, Then then) {
    return run(px.bodyWorkers(), loop, () -> px.core().route(view, namespace, healthy), after, then);
  }

  /**
   * Whether a prompt's encoding sent to {@code px}'s body workers now would wait for others: every
   * worker is busy or tasks are queued. Only a {@link ThreadPoolExecutor} can tell; any other
   * executor never waits.
   */
  static boolean encodingWaits(ProxyContext px) {
    return px.bodyWorkers() instanceof ThreadPoolExecutor pool
        && (!pool.getQueue().isEmpty() || pool.getActiveCount() >= pool.getMaximumPoolSize());
  }

  /**
   * Records {@code ahead}'s prompt ({@link RouterCore.RoutedAhead#record}: its encoding, insert and
   * pin) on {@code px}'s body workers, or here when they refuse the task (their queue is full); then
   * runs {@code after} (the caller keeps what the view reads, the request body, until then). A failure
   * is logged: the request was forwarded already, the index only misses its prompt.
   */
  static void record(ProxyContext px, RouterCore.RoutedAhead ahead, Runnable after) {
    Droppable work = new Droppable() {
      @Override
      public void run() {
        try {
          ahead.record();
        } catch (RuntimeException e) {
          LOG.log(System.Logger.Level.WARNING, "cannot record a prompt routed ahead of its encoding in the index", e);
        } finally {
          after.run();
        }
      }

      @Override
      public void dropped() {
        after.run(); // the router is closing: nothing left to record for
      }
    };
    try {
      px.bodyWorkers().execute(work);
    } catch (RejectedExecutionException full) {
      work.run();
    }
  }

  private static boolean run(Executor workers, EventLoop loop, Supplier<RouterCore.Routed> routing, Runnable after,
      Then then) {
    Droppable work = new Droppable() {
      @Override
      public void run() {
        RouterCore.Routed routed = null;
        RuntimeException failure = null;
        try {
          routed = routing.get();
        } catch (RuntimeException e) {
          failure = e;
        }
        RouterCore.Routed result = routed;
        RuntimeException error = failure;
        try {
          loop.execute(() -> {
            after.run();
            then.routed(result, error);
          });
        } catch (RejectedExecutionException shuttingDown) {
          after.run();
          if (result != null) {
            result.lease().releaseUnserved();
          }
        }
      }

      @Override
      public void dropped() {
        after.run(); // the router is closing: its exchange was answered already
      }
    };
    try {
      workers.execute(work);
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  /** A routed request with its lease replaced. */
  private record Routed(RouterCore.Routed routed, Lease lease) implements RouterCore.Routed {
    @Override
    public Decision decision() {
      return routed.decision();
    }

    @Override
    public int[] promptTokens() {
      return routed.promptTokens();
    }

    @Override
    public int promptLength() {
      return routed.promptLength();
    }

    @Override
    public int predictedCachedTokens() {
      return routed.predictedCachedTokens();
    }

    @Override
    public dev.kvroute.core.policy.PromptReads reads() {
      return routed.reads();
    }
  }

  /**
   * A lease whose operations run on the workers. The first {@link #release} or
   * {@link #releaseUnserved} is the one that counts, decided here at once (the wrapped lease decides
   * the same way when the task runs); the order in which queued operations run does not matter, as
   * a lease and its pin accept them in any order.
   */
  private static final class OffLoopLease implements Lease {
    private final Lease lease;
    private final Executor workers;
    private final AtomicBoolean ended = new AtomicBoolean();

    OffLoopLease(Lease lease, Executor workers) {
      this.lease = lease;
      this.workers = workers;
    }

    @Override
    public void firstToken() {
      run(lease::firstToken);
    }

    @Override
    public boolean release() {
      if (!ended.compareAndSet(false, true)) {
        return false;
      }
      run(lease::release);
      return true;
    }

    @Override
    public boolean releaseReported(int engineCachedTokens) {
      if (!ended.compareAndSet(false, true)) {
        return false;
      }
      run(() -> lease.releaseReported(engineCachedTokens));
      return true;
    }

    @Override
    public boolean releaseUnserved() {
      if (!ended.compareAndSet(false, true)) {
        return false;
      }
      run(lease::releaseUnserved);
      return true;
    }

    private void run(Runnable task) {
      try {
        workers.execute(task);
      } catch (RejectedExecutionException full) {
        task.run();
      }
    }
  }
}
