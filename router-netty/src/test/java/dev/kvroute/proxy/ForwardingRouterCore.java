package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.request.RequestView;
import java.util.Collection;

/** A routing core that hands every call to {@code core}: tests override the calls they hold or record. */
abstract class ForwardingRouterCore implements RouterCore {
  final RouterCore core;

  ForwardingRouterCore(RouterCore core) {
    this.core = core;
  }

  @Override
  public void addBackend(BackendId backend, long capacityTokens) {
    core.addBackend(backend, capacityTokens);
  }

  @Override
  public void removeBackend(BackendId backend) {
    core.removeBackend(backend);
  }

  @Override
  public long uncachedCodePoints(RequestView view) {
    return core.uncachedCodePoints(view);
  }

  @Override
  public RoutedAhead routeAhead(RequestView view, long namespace, Collection<BackendId> healthy) {
    return core.routeAhead(view, namespace, healthy);
  }

  @Override
  public boolean asksForMessageHashes() {
    return core.asksForMessageHashes();
  }

  @Override
  public Routed route(RequestView view, Collection<BackendId> healthy) {
    return core.route(view, healthy);
  }

  @Override
  public Routed route(RequestView view, long namespace, Collection<BackendId> healthy) {
    return core.route(view, namespace, healthy);
  }

  @Override
  public Routed route(int[] promptTokens, String sessionKey, Collection<BackendId> healthy) {
    return core.route(promptTokens, sessionKey, healthy);
  }

  @Override
  public Routed route(int[] promptTokens, String sessionKey, long namespace, Collection<BackendId> healthy) {
    return core.route(promptTokens, sessionKey, namespace, healthy);
  }

  @Override
  public Decision explain(int[] promptTokens, String sessionKey, long namespace, Collection<BackendId> healthy) {
    return core.explain(promptTokens, sessionKey, namespace, healthy);
  }

  @Override
  public Decision explain(RequestView view, Collection<BackendId> healthy) {
    return core.explain(view, healthy);
  }

  @Override
  public Decision explain(int[] promptTokens, String sessionKey, Collection<BackendId> healthy) {
    return core.explain(promptTokens, sessionKey, healthy);
  }

  @Override
  public int[] tokens(RequestView view) {
    return core.tokens(view);
  }

  @Override
  public PrefixIndex index() {
    return core.index();
  }

  @Override
  public LoadTracker loads() {
    return core.loads();
  }

  @Override
  public RoutingPolicy policy() {
    return core.policy();
  }
}
