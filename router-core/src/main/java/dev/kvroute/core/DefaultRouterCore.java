package dev.kvroute.core;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.index.PrefixMatch;
import dev.kvroute.core.index.SegmentedTokens;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Candidate;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.PromptReads;
import dev.kvroute.core.policy.RoutingContext;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.KnownLead;
import dev.kvroute.core.tokenize.PrefixedTokens;
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
  /** The prompt of a request whose policy reads nothing of it: not tokenized. */
  private static final int[] NO_TOKENS = new int[0];
  private final RoutingPolicy policy;
  private final PromptTokenizer tokenizer;
  private final PrefixIndex index;
  private final LoadTracker loads;
  private final Set<BackendId> registered = ConcurrentHashMap.newKeySet();
  /** Bumped by every add and remove: invalidates {@link #order}. */
  private final java.util.concurrent.atomic.AtomicLong registrations = new java.util.concurrent.atomic.AtomicLong();
  /** The last candidate order computed, reused while the same backends are asked for. */
  private volatile Order order = new Order(new BackendId[0], -1, new BackendId[0]);

  /**
   * The candidates for one {@code healthy} collection: its registered backends, sorted and without
   * duplicates. Routing asks for the same backends request after request (the proxy's healthy set
   * changes only with health), so the sort is done once per change, not once per request.
   *
   * @param asked the backends asked for, in the caller's order (compared by identity)
   * @param registrations {@link #registrations} when computed
   * @param sorted the registered ones among them, sorted, each once
   */
  private record Order(BackendId[] asked, long registrations, BackendId[] sorted) {
    boolean answers(BackendId[] healthy, long now) {
      if (registrations != now || healthy.length != asked.length) {
        return false;
      }
      for (int i = 0; i < healthy.length; i++) {
        if (healthy[i] != asked[i]) {
          return false;
        }
      }
      return true;
    }
  }

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
    registrations.incrementAndGet();
  }

  @Override
  public void removeBackend(BackendId backend) {
    registered.remove(backend);
    registrations.incrementAndGet();
    index.removeBackend(backend);
    loads.remove(backend);
  }

  @Override
  public Routed route(RequestView view, Collection<BackendId> healthy) {
    return route(view, 0L, healthy);
  }

  @Override
  public boolean asksForMessageHashes() {
    return policy.reads(null) != PromptReads.NONE && tokenizer.asksForMessageHashes();
  }

  @Override
  public long uncachedCodePoints(RequestView view) {
    return policy.reads(view.sessionKey()) == PromptReads.NONE ? 0 : tokenizer.uncachedCodePoints(view);
  }

  /**
   * Tokenizes {@code view} with what its tokenizer kept of an earlier prompt with the same leading
   * messages ({@link PromptTokenizer#tokenizePrefixed}): the prompt hashes only the pages after them,
   * then leaves its own tokens and page hashes for the next turn. The decision is the same as
   * routing {@link #tokens(RequestView)}. A policy that reads no prefix match takes neither.
   */
  @Override
  public Routed route(RequestView view, long namespace, Collection<BackendId> healthy) {
    PromptReads reads = policy.reads(view.sessionKey());
    if (reads == PromptReads.NONE) {
      return routeUnmatched(NO_TOKENS, view.sessionKey(), PromptReads.NONE, healthy);
    }
    if (reads != PromptReads.PREFIX_MATCH) {
      return routeUnmatched(tokenizer.tokenize(view), view.sessionKey(), reads, healthy);
    }
    PrefixedTokens t = tokenizer.tokenizePrefixed(view);
    SegmentedTokens tokens = t.segmented();
    PrefixIndex.Prompt prompt = index.prompt(tokens, namespace, t.knownPageHashes(), t.sharedTokens());
    Routed routed = route(prompt, tokens, view.sessionKey(), healthy);
    t.remember(prompt.pageHashes());
    return routed;
  }

  @Override
  public Routed route(int[] promptTokens, String sessionKey, Collection<BackendId> healthy) {
    return route(promptTokens, sessionKey, 0L, healthy);
  }

  @Override
  public Routed route(int[] promptTokens, String sessionKey, long namespace, Collection<BackendId> healthy) {
    PromptReads reads = policy.reads(sessionKey);
    if (reads != PromptReads.PREFIX_MATCH) {
      return routeUnmatched(promptTokens, sessionKey, reads, healthy);
    }
    // hashed once for match and insert
    PrefixIndex.Prompt prompt = namespace == 0 ? index.prompt(promptTokens) : index.prompt(promptTokens, namespace);
    return route(prompt, SegmentedTokens.of(promptTokens), sessionKey, healthy);
  }

  /** Routes {@code prompt}, whose tokens are {@code tokens} (held as the tokenizer gave them). */
  private Routed route(
      PrefixIndex.Prompt prompt, SegmentedTokens tokens, String sessionKey, Collection<BackendId> healthy) {
    int length = tokens.length();
    Decision decision = policy.choose(context(tokens, length, index.match(prompt), sessionKey, healthy));
    BackendId chosen = decision.backend();
    int predicted = Math.min(decision.matchedTokens(), length);
    PrefixIndex.Pin pin = PrefixIndex.Pin.NONE;
    try {
      pin = index.insertAndPin(chosen, prompt);
    } catch (IllegalArgumentException e) {
      if (registered.contains(chosen)) {
        throw e;
      }
      // Removed while this request was being routed: its view is gone, nothing to record.
    }
    Lease lease = new PinningLease(loads.acquire(chosen, length - predicted), pin);
    return new RoutedRequest(decision, tokens, predicted, lease, PromptReads.PREFIX_MATCH);
  }

  /**
   * As the interface says. The match is of the known tokens with the page hashes their kept prompt
   * left (no hashing); the pin is a {@link LatePin} that {@link Ahead#record} gives the real one.
   */
  @Override
  public RoutedAhead routeAhead(RequestView view, long namespace, Collection<BackendId> healthy) {
    if (policy.reads(view.sessionKey()) != PromptReads.PREFIX_MATCH) {
      return null;
    }
    KnownLead lead = tokenizer.knownLead(view);
    if (lead == null) {
      return null;
    }
    SegmentedTokens known = lead.tokens();
    PrefixIndex.Prompt prompt = index.prompt(known, namespace, lead.pageHashes(), known.length());
    int length = lead.estimatedTokens();
    Decision decision = policy.choose(context(known, length, index.match(prompt), view.sessionKey(), healthy));
    int predicted = Math.min(decision.matchedTokens(), known.length());
    LatePin pin = new LatePin();
    Lease lease = new PinningLease(loads.acquire(decision.backend(), length - predicted), pin);
    return new Ahead(new RoutedRequest(decision, known, predicted, lease, PromptReads.PREFIX_MATCH), length, pin,
        view, namespace);
  }

  /**
   * Routes for a policy that reads no prefix match ({@code reads}): no page hashing, no match, no
   * record in the index, no pin. The lease charges the whole prompt as prefill tokens (nothing is
   * predicted cached; none when the prompt was not tokenized).
   */
  private Routed routeUnmatched(
      int[] promptTokens, String sessionKey, PromptReads reads, Collection<BackendId> healthy) {
    SegmentedTokens tokens = SegmentedTokens.of(promptTokens);
    Decision decision = policy.choose(context(tokens, tokens.length(), null, sessionKey, healthy));
    Lease lease = loads.acquire(decision.backend(), promptTokens.length);
    return new RoutedRequest(decision, tokens, 0, lease, reads);
  }

  @Override
  public Decision explain(RequestView view, Collection<BackendId> healthy) {
    return explain(tokenizer.tokenize(view), view.sessionKey(), healthy);
  }

  @Override
  public Decision explain(int[] promptTokens, String sessionKey, Collection<BackendId> healthy) {
    return explain(promptTokens, sessionKey, 0L, healthy);
  }

  @Override
  public Decision explain(int[] promptTokens, String sessionKey, long namespace, Collection<BackendId> healthy) {
    PrefixIndex.Prompt prompt = namespace == 0 ? index.prompt(promptTokens) : index.prompt(promptTokens, namespace);
    return policy.explain(context(SegmentedTokens.of(promptTokens), promptTokens.length, index.match(prompt), sessionKey, healthy));
  }

  /**
   * The policy's context: {@code healthy}'s registered backends in name order, each with its match
   * ({@code null}: not matched, 0 tokens each) and its load, for a prompt of {@code length} tokens
   * whose first ones are {@code promptTokens} (all of them but for a prompt routed ahead of its
   * encoding, whose lead hash then covers the known ones).
   */
  private RoutingContext context(SegmentedTokens promptTokens, int length, PrefixMatch match, String sessionKey,
      Collection<BackendId> healthy) {
    BackendId[] backends = candidateOrder(healthy.toArray(BackendId[]::new));
    Candidate[] cs = new Candidate[backends.length];
    for (int i = 0; i < cs.length; i++) {
      BackendId b = backends[i];
      int matched = match == null ? 0 : Math.min(match.matched(b), length);
      cs[i] = new Candidate(b, matched, loads.load(b));
    }
    List<Candidate> candidates = List.of(cs); // immutable: the context and the decision keep it as it is
    if (candidates.isEmpty()) {
      throw new IllegalStateException(
          "healthy: no registered backend among "
              + healthy
              + " (expected: at least one backend added with addBackend)");
    }
    int[] lead = new int[Math.min(promptTokens.length(), RoutingContext.LEAD_TOKENS)];
    promptTokens.copy(0, lead, 0, lead.length);
    long leadHash = RoutingContext.leadHash(lead, RoutingContext.LEAD_TOKENS);
    return new RoutingContext(length, sessionKey, leadHash, candidates);
  }

  /** {@code healthy}'s registered backends, sorted, each once (cached while they stay the same). */
  private BackendId[] candidateOrder(BackendId[] healthy) {
    long now = registrations.get();
    Order o = order;
    if (o.answers(healthy, now)) {
      return o.sorted;
    }
    BackendId[] sorted = healthy.clone();
    Arrays.sort(sorted);
    List<BackendId> kept = new ArrayList<>(sorted.length);
    BackendId previous = null;
    for (BackendId b : sorted) {
      if (!b.equals(previous) && registered.contains(b)) {
        kept.add(b);
      }
      previous = b;
    }
    BackendId[] result = kept.toArray(BackendId[]::new);
    order = new Order(healthy, now, result);
    return result;
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
   * A request's lease that holds its prompt's pages pinned in the chosen backend's view until the
   * request ends, then releases them as used now. vLLM never evicts blocks a running request holds,
   * and its free-block queue orders cached blocks by when their request released them: when a
   * request ends, its prefix is the engine's most recently used, and another session's prefix that
   * was used later but released earlier goes first. Ordering the index by routing time instead would
   * age a long-running request's pages behind requests routed after it, and the index would evict a
   * prefix the engine keeps and keep one the engine evicted. The pin is released on the lease's one
   * successful release, from whichever thread ends the request; {@link #releaseUnserved} abandons
   * it instead (the pages only this request added are taken back).
   */
  private static final class PinningLease implements Lease {
    private final Lease lease;
    private final PrefixIndex.Pin pin;

    PinningLease(Lease lease, PrefixIndex.Pin pin) {
      this.lease = lease;
      this.pin = pin;
    }

    @Override
    public void firstToken() {
      lease.firstToken();
      pin.confirm();
    }

    @Override
    public boolean release() {
      if (!lease.release()) {
        return false;
      }
      pin.release();
      return true;
    }

    @Override
    public boolean releaseReported(int engineCachedTokens) {
      if (!lease.release()) {
        return false;
      }
      pin.release(engineCachedTokens);
      return true;
    }

    @Override
    public boolean releaseUnserved() {
      if (!lease.release()) {
        return false;
      }
      pin.abandon();
      return true;
    }
  }

  /**
   * A request routed ahead of its encoding ({@link #routeAhead}): its tokens are the known ones, and
   * its length the estimate, until {@link #record} puts the whole prompt in.
   */
  private final class Ahead implements RoutedAhead {
    private final RoutedRequest known; // the decision, the known tokens, the prediction, the lease
    private final int estimatedTokens;
    private final LatePin pin;
    private final RequestView view;
    private final long namespace;
    private volatile SegmentedTokens all; // null until recorded

    Ahead(RoutedRequest known, int estimatedTokens, LatePin pin, RequestView view, long namespace) {
      this.known = known;
      this.estimatedTokens = estimatedTokens;
      this.pin = pin;
      this.view = view;
      this.namespace = namespace;
    }

    @Override
    public void record() {
      PrefixIndex.Pin real = PrefixIndex.Pin.NONE;
      BackendId backend = known.decision().backend();
      try {
        PrefixedTokens t = tokenizer.tokenizePrefixed(view);
        SegmentedTokens tokens = t.segmented();
        PrefixIndex.Prompt prompt = index.prompt(tokens, namespace, t.knownPageHashes(), t.sharedTokens());
        try {
          real = index.insertAndPin(backend, prompt);
        } catch (IllegalArgumentException e) {
          if (registered.contains(backend)) {
            throw e;
          }
          // removed since it was routed: its view is gone, nothing to record
        }
        t.remember(prompt.pageHashes());
        all = tokens;
      } finally {
        pin.attach(real);
      }
    }

    @Override
    public Decision decision() {
      return known.decision();
    }

    @Override
    public int[] promptTokens() {
      SegmentedTokens t = all;
      return t == null ? known.promptTokens() : t.toArray();
    }

    @Override
    public int promptLength() {
      SegmentedTokens t = all;
      return t == null ? estimatedTokens : t.length();
    }

    @Override
    public int predictedCachedTokens() {
      return known.predictedCachedTokens();
    }

    @Override
    public Lease lease() {
      return known.lease();
    }
  }

  /**
   * The pin of a prompt recorded after its request was routed ({@link Ahead}): takes the lease's
   * operations before the real pin exists, in any order, and passes them on when it is {@link
   * #attach attached} (the confirmation, then the one end that counts: release, release with the
   * engine's report, or abandonment); after that it forwards each at once. A pin accepts its
   * operations in any order, so a request that ended before its prompt was recorded still leaves its
   * pages as one that ended after. Thread-safe: the lease's thread and the recording one meet on
   * this object's monitor.
   */
  static final class LatePin implements PrefixIndex.Pin {
    private static final int OPEN = 0;
    private static final int RELEASED = 1;
    private static final int REPORTED = 2;
    private static final int ABANDONED = 3;
    private PrefixIndex.Pin pin; // null until attached
    private boolean confirmed;
    private int end = OPEN;
    private int engineCachedTokens;

    /** Gives the real pin ({@link PrefixIndex.Pin#NONE}: nothing was recorded); only the first call counts. */
    synchronized void attach(PrefixIndex.Pin real) {
      if (pin != null) {
        return;
      }
      pin = java.util.Objects.requireNonNull(real, "real");
      if (confirmed) {
        real.confirm();
      }
      switch (end) {
        case RELEASED -> real.release();
        case REPORTED -> real.release(engineCachedTokens);
        case ABANDONED -> real.abandon();
        default -> { }
      }
    }

    @Override
    public synchronized void confirm() {
      if (pin != null) {
        pin.confirm();
      } else {
        confirmed = true;
      }
    }

    @Override
    public synchronized void release() {
      end(RELEASED, -1);
    }

    @Override
    public synchronized void release(int engineCachedTokens) {
      end(REPORTED, engineCachedTokens);
    }

    @Override
    public synchronized void abandon() {
      end(ABANDONED, -1);
    }

    private void end(int how, int cached) {
      if (pin != null) {
        switch (how) {
          case RELEASED -> pin.release();
          case REPORTED -> pin.release(cached);
          default -> pin.abandon();
        }
      } else if (end == OPEN) {
        end = how;
        engineCachedTokens = cached;
      }
    }
  }

  /**
   * The outcome of one {@code route} call. Its prompt's flat token array is assembled only if asked
   * for, and kept here, not in the tokens: those may be a kept prompt's, which the tokenizer holds
   * for the next turn and which would then hold its tokens twice.
   */
  private static final class RoutedRequest implements Routed {
    private final Decision decision;
    private final SegmentedTokens tokens;
    private final int predictedCachedTokens;
    private final Lease lease;
    private final PromptReads reads;
    private volatile int[] promptTokens; // two threads asking at once build equal arrays

    RoutedRequest(Decision decision, SegmentedTokens tokens, int predictedCachedTokens, Lease lease, PromptReads reads) {
      this.decision = decision;
      this.tokens = tokens;
      this.predictedCachedTokens = predictedCachedTokens;
      this.lease = lease;
      this.reads = reads;
    }

    @Override
    public Decision decision() {
      return decision;
    }

    @Override
    public int[] promptTokens() {
      int[] t = promptTokens;
      if (t == null) {
        t = tokens.assembled();
        promptTokens = t;
      }
      return t;
    }

    @Override
    public int promptLength() {
      return tokens.length();
    }

    @Override
    public int predictedCachedTokens() {
      return predictedCachedTokens;
    }

    @Override
    public Lease lease() {
      return lease;
    }

    @Override
    public PromptReads reads() {
      return reads;
    }
  }

}
