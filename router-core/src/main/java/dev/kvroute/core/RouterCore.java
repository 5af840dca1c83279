package dev.kvroute.core;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.request.RequestView;
import java.util.Collection;

/**
 * The routing brain: tokenizes a request, matches it against the prefix index, asks the policy, takes
 * a load lease, and records the prompt in the chosen backend's view. No networking.
 *
 * <p>Thread-safe: the proxy calls it from every event loop; the simulator from one thread.
 */
public interface RouterCore {

  /** The outcome of routing one request. */
  interface Routed {
    /** The decision, with matched tokens and loads per candidate. */
    Decision decision();

    /** The prompt's token ids, as the index sees them. */
    int[] promptTokens();

    /** Tokens the chosen backend is predicted to have cached (whole pages). */
    int predictedCachedTokens();

    /** The request's load lease on the chosen backend; released exactly once by the caller's paths. */
    Lease lease();
  }

  /** Registers a backend with its KV capacity in tokens (re-adding updates the capacity). */
  void addBackend(BackendId backend, long capacityTokens);

  /** Removes a backend and its index view at once. */
  void removeBackend(BackendId backend);

  /**
   * Routes {@code view} to one of {@code healthy}, records the prompt in the chosen backend's index
   * view and takes a load lease.
   *
   * @throws IllegalStateException if {@code healthy} is empty
   */
  Routed route(RequestView view, Collection<BackendId> healthy);

  /** As {@link #route(RequestView, Collection)} for a prompt already in tokens (simulator, token-id prompts). */
  Routed route(int[] promptTokens, String sessionKey, Collection<BackendId> healthy);

  /** The decision {@code view} would get now, with no side effect on the index, loads or policy state. */
  Decision explain(RequestView view, Collection<BackendId> healthy);

  /** Tokenizes {@code view}'s prompt as the index sees it (segment-cached). */
  int[] tokens(RequestView view);

  PrefixIndex index();

  LoadTracker loads();
}
