package dev.kvroute.bench.sim;

import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.kvevents.KvEventStream;
import dev.kvroute.engine.kvevents.BlockHashFormat;
import dev.kvroute.engine.kvevents.KvEventEncoder;
import dev.kvroute.engine.kvevents.KvEventLayout;
import dev.kvroute.engine.model.KvCacheEvent;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Candidate;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.LoadMeasure;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.policy.RoutingContext;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.proxy.LoraAffinity;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.function.ToIntFunction;

/**
 * The policies the simulator runs, by name, and how they are configured. Every policy but
 * {@code oracle} is router-core's own: a {@link RouterCore} with the named {@link Policies policy},
 * an approximate {@link PrefixIndex#radix radix index} (page = {@link #pageSizeTokens(int)}: the
 * fleet's block size unless set, each backend's view bounded by the fleet's KV capacity) and a {@link LoadTracker}, exactly as the proxy builds it.
 * {@code oracle} is the {@code cache-aware} rule with each candidate's matched tokens read from the
 * engines' true caches ({@code EngineModel.cachedPrefixTokens}) instead of an index.
 *
 * <p>Immutable and thread-safe.
 *
 * @param config thresholds and weights for every policy
 * @param seed seed of each policy's random generator (ties)
 * @param indexReplies whether a finished request's prompt plus generated tokens are inserted in the
 *     chosen backend's index view (as the proxy does when it has the response's tokens)
 * @param routers router replicas in front of the fleet, each with its own index, load tracker and
 *     policy state; request {@code n} of the run goes to router {@code n mod routers} (a round-robin
 *     split, so a session's turns visit every router). The oracle is one router whatever this says
 * @param timing how precise routers see the engines' events: the speculative entries' lifetime and
 *     the events' delivery delay, in model seconds ({@link PreciseTiming#DEFAULT}: llm-d's 2 s, no
 *     delay)
 * @param pageSizeTokens the routers' index page in tokens, as a router's {@code routing.pageSizeTokens};
 *     {@code 0}: the fleet's KV block size. A multiple of the block size indexes coarser than the
 *     engines cache (fewer pages per prompt to walk); a precise router needs it to divide the block
 *     size, and otherwise matches from its approximate view, as the proxy does
 *
 * <p>A policy name with the suffix {@link #PRECISE_SUFFIX} ({@code cache-aware/precise}) runs the
 * policy over router-core's {@link KvEventIndex precise index}: each router's view of each engine
 * is fed that engine's KV events, encoded on vLLM's wire format by the mock engine's encoder and
 * decoded by a {@link KvEventStream}, as a real router's subscriber does, at the end of the engine step
 * that produced them (no network delay).
 */
public record SimPolicies(
    PolicyConfig config, long seed, boolean indexReplies, int routers, PreciseTiming timing, int pageSizeTokens) {
  /** The simulator-only reference policy. */
  public static final String ORACLE = Policies.ORACLE;

  /** Every policy name the simulator accepts. */
  public static List<String> names() {
    List<String> names = new ArrayList<>(Policies.names());
    names.add(ORACLE);
    return names;
  }

  /** The suffix of a policy name that runs it over the precise (KV-event) index. */
  public static final String PRECISE_SUFFIX = "/precise";

  public SimPolicies {
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(timing, "timing");
    if (routers < 1 || routers > 64) {
      throw new IllegalArgumentException("routers: " + routers + " (expected: 1..64)");
    }
    if (pageSizeTokens < 0) {
      throw new IllegalArgumentException("pageSizeTokens: " + pageSizeTokens + " (expected: > 0, or 0 for the block size)");
    }
  }

  /** Pages of the fleet's block size. */
  public SimPolicies(PolicyConfig config, long seed, boolean indexReplies, int routers, PreciseTiming timing) {
    this(config, seed, indexReplies, routers, timing, 0);
  }

  /** Precise routers with llm-d's 2 s speculative entries and events delivered without delay. */
  public SimPolicies(PolicyConfig config, long seed, boolean indexReplies, int routers) {
    this(config, seed, indexReplies, routers, PreciseTiming.DEFAULT);
  }

  /** One router. */
  public SimPolicies(PolicyConfig config, long seed, boolean indexReplies) {
    this(config, seed, indexReplies, 1);
  }

  /** A copy with {@code n} router replicas splitting the requests round-robin. */
  public SimPolicies withRouters(int n) {
    return new SimPolicies(config, seed, indexReplies, n, timing, pageSizeTokens);
  }

  /** A copy whose precise routers see the engines' events with {@code timing}. */
  public SimPolicies withPrecise(PreciseTiming timing) {
    return new SimPolicies(config, seed, indexReplies, routers, timing, pageSizeTokens);
  }

  /**
   * A copy whose routers index pages of {@code tokens} ({@code 0}: the fleet's block size).
   *
   * @throws IllegalArgumentException if {@code tokens} is negative
   */
  public SimPolicies withPageSizeTokens(int tokens) {
    return new SimPolicies(config, seed, indexReplies, routers, timing, tokens);
  }

  /** The routers' index page for a fleet of {@code blockSizeTokens} blocks. */
  public int pageSizeTokens(int blockSizeTokens) {
    return pageSizeTokens == 0 ? blockSizeTokens : pageSizeTokens;
  }

  /**
   * Checks every policy of {@code names} against a fleet of {@code blockSizeTokens} blocks before a
   * run, as {@link #pageSizeTokens(String, int)} would during it.
   *
   * @throws IllegalArgumentException as {@link #pageSizeTokens(String, int)}
   */
  public void checkPages(List<String> names, int blockSizeTokens) {
    for (String name : names) {
      pageSizeTokens(name, blockSizeTokens);
    }
  }

  /**
   * The index page of policy {@code name}'s routers on a fleet of {@code blockSizeTokens} blocks.
   *
   * @throws IllegalArgumentException if {@code name} runs over KV events ({@link #precise}) and the
   *     page does not divide the block: a precise router maps each engine block to whole pages (the
   *     proxy would match every such backend from its approximate view instead, logged)
   */
  public int pageSizeTokens(String name, int blockSizeTokens) {
    int page = pageSizeTokens(blockSizeTokens);
    if (precise(name) && blockSizeTokens % page != 0) {
      throw new IllegalArgumentException("policy " + name + " with --page-size-tokens " + page
          + ": a precise router needs a page that divides the engines' block of " + blockSizeTokens
          + " tokens (its events map each block to whole pages)");
    }
    return page;
  }

  /**
   * How a precise router's view of an engine lags the engine, in model seconds.
   *
   * <p>A real router's speculative entries live {@code 2 s} of its own wall clock (llm-d's TTL), and
   * each batch of events reaches it some wall time after the engine's step produced it (the
   * publisher's send, loopback, the subscriber's decode). Against engines at time scale K, both are K
   * times as long in model time; {@link #ofWallClock} converts.
   *
   * @param speculativeTtlSeconds model seconds a routed prompt's pages count as held before the
   *     engine's events confirm them (0: no speculation)
   * @param eventDelaySeconds model seconds from the end of the engine step that produced a batch to
   *     the router applying it
   */
  public record PreciseTiming(double speculativeTtlSeconds, double eventDelaySeconds) {
    /** llm-d's 2 s speculative entries, events applied at the end of their step. */
    public static final PreciseTiming DEFAULT = new PreciseTiming(2, 0);

    public PreciseTiming {
      if (!(speculativeTtlSeconds >= 0) || Double.isInfinite(speculativeTtlSeconds)) {
        throw new IllegalArgumentException("speculativeTtlSeconds: " + speculativeTtlSeconds + " (expected: >= 0)");
      }
      if (!(eventDelaySeconds >= 0) || Double.isInfinite(eventDelaySeconds)) {
        throw new IllegalArgumentException("eventDelaySeconds: " + eventDelaySeconds + " (expected: >= 0)");
      }
    }

    /**
     * What a real router with {@code settings} (wall-clock TTL) sees of engines at time scale {@code
     * timeScale}, its events arriving {@code eventDelayWallSeconds} after their step: both times K.
     */
    public static PreciseTiming ofWallClock(
        KvEventIndex.Settings settings, double timeScale, double eventDelayWallSeconds) {
      return new PreciseTiming(
          settings.speculativeTtl().toNanos() / 1e9 * timeScale, eventDelayWallSeconds * timeScale);
    }

    /** The index settings a simulated router runs with (its ticker reads model time). */
    KvEventIndex.Settings settings() {
      return new KvEventIndex.Settings(
          java.time.Duration.ofNanos(Math.round(speculativeTtlSeconds * 1e9)),
          KvEventIndex.Settings.DEFAULT.staleAfter());
    }
  }

  /** Whether {@code name} runs over the precise index. */
  public static boolean precise(String name) {
    return name.endsWith(PRECISE_SUFFIX);
  }

  /** {@code name} without the precise suffix. */
  static String policyOf(String name) {
    return precise(name) ? name.substring(0, name.length() - PRECISE_SUFFIX.length()) : name;
  }

  /**
   * The seed scenario's configuration: load on the prefill queue (requests routed and not yet past
   * their first token), balance thresholds abs 3 and rel 1.5, SGLang's cache threshold 0.3; Dynamo's
   * unit cost weights; seed 1; replies not indexed.
   */
  public static SimPolicies seedScenario() {
    return new SimPolicies(
        PolicyConfig.defaults().withLoadMeasure(LoadMeasure.PREFILLING_REQUESTS).withBalance(3, 1.5),
        1,
        false);
  }

  public SimPolicies withConfig(PolicyConfig newConfig) {
    return new SimPolicies(newConfig, seed, indexReplies, routers, timing, pageSizeTokens);
  }

  public SimPolicies withIndexReplies(boolean newIndexReplies) {
    return new SimPolicies(config, seed, newIndexReplies, routers, timing, pageSizeTokens);
  }

  /** @throws IllegalArgumentException if {@code name} is not a known policy */
  void check(String name) {
    if (!names().contains(name) && !(precise(name) && Policies.names().contains(policyOf(name)))) {
      throw new IllegalArgumentException("policy: " + name + " (expected: one of " + String.join(", ", names()) + ")");
    }
  }

  SimRouter router(String name, SimFleet fleet, PromptTokenizer tokenizer) {
    check(name);
    if (ORACLE.equals(name)) {
      return new OracleRouter(Policies.create(name, config, new SplittableRandom(seed)), LoadTracker.create(),
          fleet, tokenizer, config.balanceAbsThreshold());
    }
    List<SimRouter> replicas = new ArrayList<>();
    for (int r = 0; r < routers; r++) {
      // each replica its own draws (as separately started routers with one seed would share them,
      // a replica's seed is offset by its number)
      RoutingPolicy policy = Policies.create(policyOf(name), config, new SplittableRandom(seed + r));
      PrefixIndex index = PrefixIndex.radix(pageSizeTokens(name, fleet.spec().blockSizeTokens()), fleet.clock());
      if (precise(name)) {
        index = KvEventIndex.create(index, fleet.clock(), timing.settings());
      }
      RouterCore core = RouterCore.create(policy, tokenizer, index, LoadTracker.create());
      for (BackendId b : fleet.backends()) {
        core.addBackend(b, fleet.spec().kvCapacityTokens());
        if (index instanceof KvEventIndex events) {
          events.enableEvents(b);
        }
      }
      replicas.add(
          new CoreRouter(core, fleet, indexReplies, fleet.clock(), config.balanceAbsThreshold(),
              Simulation.secondsToNanos(timing.eventDelaySeconds())));
    }
    return replicas.size() == 1 ? replicas.get(0) : new SplitRouter(replicas);
  }

  /** Several router replicas; request {@code n} goes to replica {@code n mod size}. */
  private static final class SplitRouter implements SimRouter {
    private final List<SimRouter> replicas;
    private final Map<Routed, SimRouter> routedBy = new java.util.IdentityHashMap<>();
    private long next;

    SplitRouter(List<SimRouter> replicas) {
      this.replicas = replicas;
    }

    @Override
    public Routed route(RequestView view) {
      SimRouter r = replicas.get((int) (next++ % replicas.size()));
      Routed routed = r.route(view);
      routedBy.put(routed, r);
      return routed;
    }

    @Override
    public void finished(Routed routed, int[] outputTokens) {
      SimRouter r = routedBy.remove(routed);
      if (r != null) {
        r.finished(routed, outputTokens);
      }
    }

    @Override
    public void kvEvents(int replica, long nowNanos, List<KvCacheEvent> events) {
      for (SimRouter r : replicas) {
        r.kvEvents(replica, nowNanos, events);
      }
    }
  }

  /**
   * The routing core a real run of policy {@code name} uses: the same policy, configuration, seed,
   * page size and tokenizer as the simulator's, over a radix index timed by {@code ticker}. Backends
   * are registered by the proxy (named {@link #backendId backendId(i)}, with the fleet's capacity).
   *
   * @throws IllegalArgumentException for {@code oracle} or an unknown name
   */
  public RouterCore core(String name, int pageSizeTokens, PromptTokenizer tokenizer, dev.kvroute.core.Ticker ticker) {
    return core(name, pageSizeTokens, tokenizer, ticker, 0);
  }

  /**
   * As {@link #core(String, int, PromptTokenizer, dev.kvroute.core.Ticker)} for router replica {@code
   * replica} of {@link #routers}: its policy's draws are seeded with {@code seed + replica}, as the
   * simulator's replicas are. A name with {@link #PRECISE_SUFFIX} gets a {@link KvEventIndex} (default
   * settings: llm-d's 2 s speculative entries) over the radix index, which the proxy subscribes to the
   * engines' KV events in precise mode.
   *
   * @throws IllegalArgumentException for {@code oracle}, an unknown name, or {@code replica} outside
   *     {@code 0..routers-1}
   */
  public RouterCore core(
      String name, int pageSizeTokens, PromptTokenizer tokenizer, dev.kvroute.core.Ticker ticker, int replica) {
    if (ORACLE.equals(name)) {
      throw new IllegalArgumentException("policy: oracle (expected: a policy a real router can run)");
    }
    check(name);
    if (replica < 0 || replica >= routers) {
      throw new IllegalArgumentException("replica: " + replica + " (expected: 0.." + (routers - 1) + ")");
    }
    PrefixIndex index = PrefixIndex.radix(pageSizeTokens, ticker);
    if (precise(name)) {
      index = KvEventIndex.create(index, ticker, KvEventIndex.Settings.DEFAULT);
    }
    return RouterCore.create(
        Policies.create(policyOf(name), config, new SplittableRandom(seed + replica)),
        tokenizer,
        index,
        LoadTracker.create());
  }

  /** The id of replica {@code i} in the simulator and in the demo's router: {@code engine-i}. */
  public static BackendId backendId(int i) {
    return BackendId.of("engine-" + i);
  }

  /**
   * The model a request names, by its {@code model} field.
   *
   * @throws IllegalArgumentException if the fleet serves no such model or adapter
   */
  static ModelPlan.Binding resolve(SimFleet.Models models, RequestView view) {
    ModelPlan.Binding b = models.plan().resolve(view.model());
    if (b == null) {
      throw new IllegalArgumentException("model: " + view.model() + " (expected: a model the fleet serves)");
    }
    return b;
  }

  /**
   * The replicas a request for {@code model} may go to, as the proxy picks them: those serving its base
   * model and, with LoRA affinity on, among them the ones {@link LoraAffinity} prefers for its adapter
   * (their state read from the replicas' adapter slots).
   */
  static List<Integer> candidates(
      SimFleet.Models models, ModelPlan.Binding model, ToIntFunction<Integer> inFlight, long maxExtraInFlight) {
    List<Integer> serving = models.plan().replicasOf(model.base());
    if (!models.loraAffinity()) {
      return serving;
    }
    return LoraAffinity.prefer(serving, model.adapter(), models::state, inFlight, maxExtraInFlight);
  }

  /**
   * A router-core router, as the proxy runs it. It tokenizes every prompt itself (the engines need the
   * tokens), so the core skips only the index work of a policy that reads no prefix match, as the
   * proxy's does ({@link dev.kvroute.core.policy.PromptReads}).
   */
  private static final class CoreRouter implements SimRouter {
    private final RouterCore core;
    private final List<BackendId> backends;
    private final Map<BackendId, Integer> replicas = new HashMap<>();
    private final boolean indexReplies;
    private final SimFleet.Models models;
    private final long maxExtraInFlight;
    private final VirtualClock clock;

    /** Per engine, the decoding stream a subscriber would run; empty without a precise index. */
    private final List<KvEventStream> streams = new ArrayList<>();
    private final List<long[]> nextSeq = new ArrayList<>();
    private final KvEventEncoder encoder = new KvEventEncoder(KvEventLayout.CURRENT, BlockHashFormat.INT);
    /** Model nanoseconds from a batch's step to its application. */
    private final long eventDelayNanos;
    /** Batches produced and not yet applied, in production order (due times are nondecreasing). */
    private final java.util.ArrayDeque<PendingBatch> pending = new java.util.ArrayDeque<>();

    /** A batch on its way to the router: applied at {@code dueNanos}. */
    private record PendingBatch(long dueNanos, int replica, long stepNanos, List<KvCacheEvent> events) {}

    CoreRouter(
        RouterCore core, SimFleet fleet, boolean indexReplies, VirtualClock clock, long maxExtraInFlight,
        long eventDelayNanos) {
      this.eventDelayNanos = eventDelayNanos;
      this.clock = clock;
      this.core = core;
      this.backends = fleet.backends();
      this.indexReplies = indexReplies;
      this.models = fleet.models();
      this.maxExtraInFlight = maxExtraInFlight;
      for (int i = 0; i < backends.size(); i++) {
        replicas.put(backends.get(i), i);
        if (core.index() instanceof KvEventIndex events) {
          streams.add(new KvEventStream(backends.get(i), events, null, clock::nanos));
          nextSeq.add(new long[1]);
        }
      }
    }

    @Override
    public void kvEvents(int replica, long nowNanos, List<KvCacheEvent> events) {
      if (streams.isEmpty()) {
        return;
      }
      if (eventDelayNanos == 0) {
        deliver(replica, nowNanos, events);
        return;
      }
      pending.addLast(new PendingBatch(nowNanos + eventDelayNanos, replica, nowNanos, events));
    }

    /**
     * Applies the batches due by now: the view is read only when routing, so applying them then is
     * the same as applying each at its due time.
     */
    private void deliverDue() {
      long now = clock.nanos();
      PendingBatch b;
      while ((b = pending.peekFirst()) != null && b.dueNanos() <= now) {
        pending.pollFirst();
        deliver(b.replica(), b.stepNanos(), b.events());
      }
    }

    private void deliver(int replica, long stepNanos, List<KvCacheEvent> events) {
      // ts = the step's virtual time; the index's lag is the delivery delay
      byte[] payload = encoder.encode(stepNanos / 1e9, events, 0);
      streams.get(replica).onMessage(nextSeq.get(replica)[0]++, payload);
    }

    @Override
    public Routed route(RequestView view, java.util.function.IntPredicate allowed) {
      deliverDue();
      if (models != null) {
        return route(view);
      }
      List<BackendId> ids = new ArrayList<>(backends.size());
      for (int i = 0; i < backends.size(); i++) {
        if (allowed.test(i)) {
          ids.add(backends.get(i));
        }
      }
      RouterCore.Routed r = core.route(core.tokens(view), view.sessionKey(), ids.isEmpty() ? backends : ids);
      return new Routed(
          replicas.get(r.decision().backend()), r.promptTokens(), r.lease(), r.decision().rule(),
          r.predictedCachedTokens());
    }

    @Override
    public Routed route(RequestView view) {
      deliverDue();
      if (models == null) {
        RouterCore.Routed r = core.route(core.tokens(view), view.sessionKey(), backends);
        return new Routed(
            replicas.get(r.decision().backend()), r.promptTokens(), r.lease(), r.decision().rule(),
            r.predictedCachedTokens());
      }
      // as the proxy: the model's replicas only, LoRA affinity among them, the model's namespace
      ModelPlan.Binding model = resolve(models, view);
      List<Integer> candidates =
          candidates(models, model, i -> core.loads().load(backends.get(i)).inFlightRequests(), maxExtraInFlight);
      List<BackendId> ids = new ArrayList<>(candidates.size());
      for (int i : candidates) {
        ids.add(backends.get(i));
      }
      long namespace = PrefixIndex.namespace(model.adapter());
      RouterCore.Routed r = core.route(core.tokens(view), view.sessionKey(), namespace, ids);
      return new Routed(
          replicas.get(r.decision().backend()), r.promptTokens(), r.lease(), r.decision().rule(),
          r.predictedCachedTokens(), namespace);
    }

    @Override
    public void finished(Routed routed, int[] outputTokens) {
      if (indexReplies) {
        int[] prompt = routed.promptTokens();
        int[] all = java.util.Arrays.copyOf(prompt, prompt.length + outputTokens.length);
        System.arraycopy(outputTokens, 0, all, prompt.length, outputTokens.length);
        core.index().insert(backends.get(routed.replica()), core.index().prompt(all, routed.namespace()));
      }
    }
  }

  /** The cache-aware rule fed with the engines' true cached prefixes. */
  private static final class OracleRouter implements SimRouter {
    private final RoutingPolicy policy;
    private final LoadTracker loads;
    private final SimFleet fleet;
    private final List<BackendId> backends;
    private final PromptTokenizer tokenizer;

    private final long maxExtraInFlight;

    OracleRouter(
        RoutingPolicy policy, LoadTracker loads, SimFleet fleet, PromptTokenizer tokenizer, long maxExtraInFlight) {
      this.maxExtraInFlight = maxExtraInFlight;
      this.policy = policy;
      this.loads = loads;
      this.fleet = fleet;
      this.backends = fleet.backends();
      this.tokenizer = tokenizer;
    }

    @Override
    public Routed route(RequestView view) {
      int[] tokens = tokenizer.tokenize(view);
      List<Candidate> candidates = new ArrayList<>(backends.size());
      SimFleet.Models models = fleet.models();
      if (models == null) {
        for (int i = 0; i < backends.size(); i++) {
          BackendId b = backends.get(i);
          candidates.add(new Candidate(b, fleet.engines().get(i).cachedPrefixTokens(tokens), loads.load(b)));
        }
      } else {
        ModelPlan.Binding model = resolve(models, view);
        for (int i : SimPolicies.candidates(
            models, model, r -> loads.load(backends.get(r)).inFlightRequests(), maxExtraInFlight)) {
          BackendId b = backends.get(i);
          candidates.add(
              new Candidate(b, fleet.engines().get(i).cachedPrefixTokens(tokens, model.adapter()), loads.load(b)));
        }
      }
      Decision d = policy.choose(new RoutingContext(tokens.length, view.sessionKey(), 0, candidates));
      int replica = backends.indexOf(d.backend());
      Lease lease = loads.acquire(d.backend(), tokens.length - d.matchedTokens());
      return new Routed(replica, tokens, lease, d.rule(), d.matchedTokens());
    }
  }
}
