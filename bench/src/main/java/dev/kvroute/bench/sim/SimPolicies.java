package dev.kvroute.bench.sim;

import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.index.PrefixIndex;
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
 * an approximate {@link PrefixIndex#radix radix index} (page = the fleet's block size, each backend's
 * view bounded by the fleet's KV capacity) and a {@link LoadTracker}, exactly as the proxy builds it.
 * {@code oracle} is the {@code cache-aware} rule with each candidate's matched tokens read from the
 * engines' true caches ({@code EngineModel.cachedPrefixTokens}) instead of an index.
 *
 * <p>Immutable and thread-safe.
 *
 * @param config thresholds and weights for every policy
 * @param seed seed of each policy's random generator (ties)
 * @param indexReplies whether a finished request's prompt plus generated tokens are inserted in the
 *     chosen backend's index view (as the proxy does when it has the response's tokens)
 */
public record SimPolicies(PolicyConfig config, long seed, boolean indexReplies) {
  /** The simulator-only reference policy. */
  public static final String ORACLE = Policies.ORACLE;

  /** Every policy name the simulator accepts. */
  public static List<String> names() {
    List<String> names = new ArrayList<>(Policies.names());
    names.add(ORACLE);
    return names;
  }

  public SimPolicies {
    Objects.requireNonNull(config, "config");
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
    return new SimPolicies(newConfig, seed, indexReplies);
  }

  public SimPolicies withIndexReplies(boolean newIndexReplies) {
    return new SimPolicies(config, seed, newIndexReplies);
  }

  /** @throws IllegalArgumentException if {@code name} is not a known policy */
  void check(String name) {
    if (!names().contains(name)) {
      throw new IllegalArgumentException("policy: " + name + " (expected: one of " + String.join(", ", names()) + ")");
    }
  }

  SimRouter router(String name, SimFleet fleet, PromptTokenizer tokenizer) {
    check(name);
    RoutingPolicy policy = Policies.create(name, config, new SplittableRandom(seed));
    LoadTracker loads = LoadTracker.create();
    if (ORACLE.equals(name)) {
      return new OracleRouter(policy, loads, fleet, tokenizer, config.balanceAbsThreshold());
    }
    RouterCore core =
        RouterCore.create(
            policy, tokenizer, PrefixIndex.radix(fleet.spec().blockSizeTokens(), fleet.clock()), loads);
    for (BackendId b : fleet.backends()) {
      core.addBackend(b, fleet.spec().kvCapacityTokens());
    }
    return new CoreRouter(core, fleet, indexReplies, config.balanceAbsThreshold());
  }

  /**
   * The routing core a real run of policy {@code name} uses: the same policy, configuration, seed,
   * page size and tokenizer as the simulator's, over a radix index timed by {@code ticker}. Backends
   * are registered by the proxy (named {@link #backendId backendId(i)}, with the fleet's capacity).
   *
   * @throws IllegalArgumentException for {@code oracle} or an unknown name
   */
  public RouterCore core(String name, int pageSizeTokens, PromptTokenizer tokenizer, dev.kvroute.core.Ticker ticker) {
    if (ORACLE.equals(name)) {
      throw new IllegalArgumentException("policy: oracle (expected: a policy a real router can run)");
    }
    check(name);
    return RouterCore.create(
        Policies.create(name, config, new SplittableRandom(seed)),
        tokenizer,
        PrefixIndex.radix(pageSizeTokens, ticker),
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
    return LoraAffinity.prefer(serving, model.adapter(), i -> models.gates().get(i).state(), inFlight, maxExtraInFlight);
  }

  /** A router-core router, as the proxy runs it. */
  private static final class CoreRouter implements SimRouter {
    private final RouterCore core;
    private final List<BackendId> backends;
    private final Map<BackendId, Integer> replicas = new HashMap<>();
    private final boolean indexReplies;
    private final SimFleet.Models models;
    private final long maxExtraInFlight;

    CoreRouter(RouterCore core, SimFleet fleet, boolean indexReplies, long maxExtraInFlight) {
      this.core = core;
      this.backends = fleet.backends();
      this.indexReplies = indexReplies;
      this.models = fleet.models();
      this.maxExtraInFlight = maxExtraInFlight;
      for (int i = 0; i < backends.size(); i++) {
        replicas.put(backends.get(i), i);
      }
    }

    @Override
    public Routed route(RequestView view) {
      if (models == null) {
        RouterCore.Routed r = core.route(view, backends);
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
      long namespace = PrefixIndex.namespace(model.base(), model.adapter());
      RouterCore.Routed r = core.route(view, namespace, ids);
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
