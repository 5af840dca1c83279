package dev.kvroute.core;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.index.PrefixMatch;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Candidate;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.RoutingContext;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** {@link RouterCore} composing a policy, a prompt tokenizer, a prefix index and a load tracker. */
final class DefaultRouterCore implements RouterCore {
  private final RoutingPolicy policy;
  private final PromptTokenizer tokenizer;
  private final PrefixIndex index;
  private final LoadTracker loads;
  private final Set<BackendId> registered = ConcurrentHashMap.newKeySet();

  DefaultRouterCore(
      RoutingPolicy policy, PromptTokenizer tokenizer, PrefixIndex index, LoadTracker loads) {
    this.policy = Objects.requireNonNull(policy, "policy");
    this.tokenizer = Objects.requireNonNull(tokenizer, "tokenizer");
    this.index = Objects.requireNonNull(index, "index");
    this.loads = Objects.requireNonNull(loads, "loads");
  }

  @Override
  public void addBackend(BackendId backend, long capacityTokens) {
    index.addBackend(backend, capacityTokens);
    registered.add(backend);
  }

  @Override
  public void removeBackend(BackendId backend) {
    registered.remove(backend);
    index.removeBackend(backend);
    loads.remove(backend);
  }

  @Override
  public Routed route(RequestView view, Collection<BackendId> healthy) {
    return route(tokenizer.tokenize(view), view.sessionKey(), healthy);
  }

  @Override
  public Routed route(int[] promptTokens, String sessionKey, Collection<BackendId> healthy) {
    PrefixIndex.Prompt prompt = index.prompt(promptTokens); // hashed once for match and insert
    Decision decision = policy.choose(context(prompt, sessionKey, healthy));
    BackendId chosen = decision.backend();
    int predicted = Math.min(decision.matchedTokens(), promptTokens.length);
    try {
      index.insert(chosen, prompt);
    } catch (IllegalArgumentException e) {
      if (registered.contains(chosen)) {
        throw e;
      }
      // Removed while this request was being routed: its view is gone, nothing to record.
    }
    Lease lease = new RefreshingLease(loads.acquire(chosen, promptTokens.length - predicted), chosen, prompt);
    return new RoutedRequest(decision, promptTokens, predicted, lease);
  }

  @Override
  public Decision explain(RequestView view, Collection<BackendId> healthy) {
    return explain(tokenizer.tokenize(view), view.sessionKey(), healthy);
  }

  @Override
  public Decision explain(int[] promptTokens, String sessionKey, Collection<BackendId> healthy) {
    return policy.explain(context(index.prompt(promptTokens), sessionKey, healthy));
  }

  private RoutingContext context(
      PrefixIndex.Prompt prompt, String sessionKey, Collection<BackendId> healthy) {
    int[] promptTokens = prompt.tokens();
    BackendId[] backends = healthy.toArray(BackendId[]::new);
    Arrays.sort(backends);
    PrefixMatch match = index.match(prompt);
    List<Candidate> candidates = new ArrayList<>(backends.length);
    BackendId previous = null;
    for (BackendId b : backends) {
      if (b.equals(previous) || !registered.contains(b)) {
        continue;
      }
      previous = b;
      int matched = Math.min(match.matched(b), promptTokens.length);
      candidates.add(new Candidate(b, matched, loads.load(b)));
    }
    if (candidates.isEmpty()) {
      throw new IllegalStateException(
          "healthy: no registered backend among "
              + healthy
              + " (expected: at least one backend added with addBackend)");
    }
    long firstPageHash = RoutingContext.firstPageHash(promptTokens, index.pageSizeTokens());
    return new RoutingContext(promptTokens.length, sessionKey, firstPageHash, candidates);
  }

  @Override
  public int[] tokens(RequestView view) {
    return tokenizer.tokenize(view);
  }

  @Override
  public PrefixIndex index() {
    return index;
  }

  @Override
  public LoadTracker loads() {
    return loads;
  }

  @Override
  public RoutingPolicy policy() {
    return policy;
  }

  /**
   * A request's lease that, when the request ends, marks its prompt's pages used again in the chosen
   * backend's view. vLLM never evicts blocks a running request holds, and its free-block queue orders
   * cached blocks by when their request released them; so when a request ends, its prefix is the
   * engine's most recently used, and another session's prefix that was used earlier but released
   * earlier goes first. Refreshing at release keeps the index's LRU order close to that (the insert at
   * routing time alone would age a long-running request's pages behind requests routed after it, and
   * the index would then evict a prefix the engine keeps and keep one the engine evicted).
   */
  private final class RefreshingLease implements Lease {
    private final Lease lease;
    private final BackendId backend;
    private final PrefixIndex.Prompt prompt;

    RefreshingLease(Lease lease, BackendId backend, PrefixIndex.Prompt prompt) {
      this.lease = lease;
      this.backend = backend;
      this.prompt = prompt;
    }

    @Override
    public void firstToken() {
      lease.firstToken();
    }

    @Override
    public boolean release() {
      if (!lease.release()) {
        return false;
      }
      if (registered.contains(backend)) {
        try {
          index.insert(backend, prompt);
        } catch (IllegalArgumentException e) {
          // removed meanwhile: its view is gone, nothing to refresh
        }
      }
      return true;
    }
  }

  /** The outcome of one {@code route} call. */
  private record RoutedRequest(
      Decision decision, int[] promptTokens, int predictedCachedTokens, Lease lease)
      implements Routed {}
}
