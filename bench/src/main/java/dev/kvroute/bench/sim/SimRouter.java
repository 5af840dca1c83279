package dev.kvroute.bench.sim;

import dev.kvroute.core.load.Lease;
import dev.kvroute.core.policy.Rule;
import dev.kvroute.core.request.RequestView;

/**
 * How the simulator asks a policy where a request goes, at the current virtual time. One instance per
 * policy run, owning that run's index, load tracker and policy state.
 *
 * <p>Not thread-safe: one simulation thread owns it.
 */
interface SimRouter {
  /**
   * The outcome of routing one request.
   *
   * @param replica index of the chosen engine
   * @param promptTokens the prompt's tokens
   * @param lease the request's load lease on the chosen engine
   * @param rule the policy rule that decided
   * @param predictedCachedTokens tokens the policy credited the chosen engine with
   * @param namespace the prefix-index namespace of the request's model and adapter (0: none)
   */
  record Routed(int replica, int[] promptTokens, Lease lease, Rule rule, int predictedCachedTokens, long namespace) {
    Routed(int replica, int[] promptTokens, Lease lease, Rule rule, int predictedCachedTokens) {
      this(replica, promptTokens, lease, rule, predictedCachedTokens, 0L);
    }
  }

  /** Routes {@code view} to one of the fleet's replicas and takes its load lease. */
  Routed route(RequestView view);

  /**
   * Routes {@code view} among the replicas {@code allowed} accepts (at least one), as the proxy routes
   * among the unsaturated backends under admission control. Routers that cannot restrict their choice
   * ignore {@code allowed}.
   */
  default Routed route(RequestView view, java.util.function.IntPredicate allowed) {
    return route(view);
  }

  /** The request routed as {@code routed} ended after generating {@code outputTokens}. */
  default void finished(Routed routed, int[] outputTokens) {}

  /**
   * Engine {@code replica}'s prefix-cache changes of one step that ended at {@code nowNanos}: what its
   * KV-event publisher would send as one batch. Routers without a precise index ignore them.
   */
  default void kvEvents(int replica, long nowNanos, java.util.List<dev.kvroute.engine.model.KvCacheEvent> events) {}
}
