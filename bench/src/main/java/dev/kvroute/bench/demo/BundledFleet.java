package dev.kvroute.bench.demo;

import dev.kvroute.bench.sim.FleetEngines;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.engine.server.MockEngineServer;
import dev.kvroute.engine.kvevents.BlockHashFormat;
import dev.kvroute.engine.kvevents.KvEventLayout;
import dev.kvroute.engine.kvevents.KvEventsConfig;
import dev.kvroute.proxy.KvrouteServer;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ConfigLoader;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A fresh in-process fleet for one policy's real run: the workload's mock engines on loopback
 * (ephemeral ports, the seed engine configuration, time scale K, cached tokens reported in usage)
 * and a kvroute proxy, also on loopback only, in front of them running the policy with the
 * simulator's exact routing core configuration ({@link SimPolicies#core}), backends named {@code
 * engine-i} with the fleet's KV capacity. With {@link SimPolicies#routers} {@code N > 1}, N proxies
 * (each with its own core, seeded as the simulator's replicas). A policy named with {@link
 * SimPolicies#PRECISE_SUFFIX} ({@code cache-aware/precise}) starts the engines with vLLM's KV-event
 * publisher on (ephemeral loopback ports, with replay) and the proxies in precise index mode, each
 * subscribed to every engine.
 *
 * <p>Thread-safe; close it to stop the router and the engines.
 */
public final class BundledFleet implements AutoCloseable {
  /**
   * Batches each in-process engine keeps for replay: 1,000 steps, about 12 wall seconds of the seed
   * workload at K = 5, where a router asks for a few. vLLM's default of 10,000 kept every payload of
   * the run alive in the demo's one JVM (about 150 MB of byte arrays across 8 engines 30 s into the
   * precise run), which every young collection copied: pauses 3-4 times the other policies', and the
   * load driver's sends stopped with everything else (docs/results.md, issue 15).
   */
  static final int REPLAY_BUFFER_STEPS = 1_000;

  /** The address the engines and the router listen on. */
  static final String LOOPBACK = "127.0.0.1";

  private final MockEngineFleet engines;
  private final List<KvrouteServer> routers;

  private BundledFleet(MockEngineFleet engines, List<KvrouteServer> routers) {
    this.engines = engines;
    this.routers = List.copyOf(routers);
  }

  /**
   * Starts the engines and the router.
   *
   * @param policy a policy a real router runs (not {@code oracle})
   * @param timeScale the engines' K: model seconds per wall second
   * @param tokenizer the router's prompt tokenizer
   */
  public static BundledFleet start(
      FleetSpec fleet, String policy, SimPolicies policies, double timeScale, PromptTokenizer tokenizer) {
    return start(fleet, FleetEngines.config(fleet), policy, policies, timeScale, tokenizer);
  }

  /**
   * As {@link #start(FleetSpec, String, SimPolicies, double, PromptTokenizer)}, with each engine's
   * configuration given (another scheduler or token budget); its block size and KV capacity should be
   * the fleet's, which the router's index is sized with.
   */
  public static BundledFleet start(
      FleetSpec fleet, EngineConfig engine, String policy, SimPolicies policies, double timeScale,
      PromptTokenizer tokenizer) {
    return start(fleet, engine, policy, policies, timeScale, tokenizer, (java.util.function.UnaryOperator<ProxyConfig>) null);
  }

  /**
   * As {@link #start(FleetSpec, EngineConfig, String, SimPolicies, double, PromptTokenizer)}, with the
   * router's configuration changed by {@code tune} ({@code null}: as {@link #routerConfig}, admission
   * off as in the agreement runs).
   */
  public static BundledFleet start(
      FleetSpec fleet, EngineConfig engine, String policy, SimPolicies policies, double timeScale,
      PromptTokenizer tokenizer, java.util.function.UnaryOperator<ProxyConfig> tune) {
    boolean precise = SimPolicies.precise(policy);
    MockEngineOptions.Builder options =
        MockEngineOptions.builder()
            .host(LOOPBACK)
            .port(0)
            .engine(engine)
            .timeScale(timeScale)
            .enablePromptTokensDetails(true)
            .tokenizer(tokenizer.tokenizer().name());
    if (precise) {
      // vLLM's ZMQ publisher (current layout) with a replay socket, on ephemeral loopback ports
      KvEventsConfig e = KvEventsConfig.ephemeral(KvEventLayout.CURRENT, BlockHashFormat.INT);
      options.kvEvents(new KvEventsConfig(e.enableKvCacheEvents(), e.publisher(), e.endpoint(), e.replayEndpoint(),
          REPLAY_BUFFER_STEPS, e.hwm(), e.maxQueueSize(), e.topic(), e.layout(), e.blockHashFormat()));
    }
    MockEngineFleet engines = MockEngineFleet.start(options.build(), fleet.replicas());
    List<KvrouteServer> routers = new ArrayList<>();
    try {
      List<BackendConfig> backends = new ArrayList<>();
      for (int i = 0; i < fleet.replicas(); i++) {
        MockEngineServer replica = engines.replicas().get(i);
        backends.add(
            precise
                ? new BackendConfig(
                    URI.create(engines.urls().get(i)), SimPolicies.backendId(i).name(), fleet.kvCapacityTokens(),
                    List.of(), URI.create(replica.kvEventsEndpoint()), URI.create(replica.kvEventsReplayEndpoint()))
                : new BackendConfig(
                    URI.create(engines.urls().get(i)), SimPolicies.backendId(i).name(), fleet.kvCapacityTokens()));
      }
      ProxyConfig config = routerConfig(policy, backends);
      if (tune != null) {
        config = tune.apply(config);
      }
      for (int r = 0; r < policies.routers(); r++) {
        RouterCore core = policies.core(policy, policies.pageSizeTokens(policy, fleet.blockSizeTokens()), tokenizer, Ticker.system(), r);
        routers.add(KvrouteServer.start(config, core));
      }
      return new BundledFleet(engines, routers);
    } catch (RuntimeException e) {
      for (KvrouteServer r : routers) {
        r.close();
      }
      engines.close();
      throw e;
    }
  }

  /**
   * The router's configuration: {@code policy} over {@code backends} on an ephemeral loopback port,
   * without the admin API. Loopback like the engines (the proxy's own default bind is {@code
   * 0.0.0.0}): a load test opens no port to the network. Without admission control: the simulator does
   * not model the router's queue yet, and its learned limit reads the explainer's fcfs-prefill engine,
   * whose prefills always queue, as saturated, which moves sticky's sessions (busiest/mean 0.44 below
   * the prediction in the first run with it on).
   */
  static ProxyConfig routerConfig(String policy, List<BackendConfig> backends) {
    ProxyConfig c = ConfigLoader.parse("", Map.of("bind", LOOPBACK));
    boolean precise = SimPolicies.precise(policy);
    String name = precise ? policy.substring(0, policy.length() - SimPolicies.PRECISE_SUFFIX.length()) : policy;
    return c.withPort(0)
        .withAdminPort(-1)
        .withPolicy(name)
        .withIndex(c.index().withMode(precise ? "precise" : "approximate"))
        .withAdmission(c.admission().withEnabled(false))
        .withBackends(backends);
  }

  /** The (first) router's base URL. */
  public URI routerUri() {
    return routers.get(0).uri();
  }

  /**
   * Every router replica's base URL ({@link SimPolicies#routers} of them, each with its own index, load
   * tracker and policy state, in front of the same engines); the load driver splits requests across
   * them round-robin ({@link dev.kvroute.bench.load.LoadSettings#withTargets}).
   */
  public List<URI> routerUris() {
    List<URI> out = new ArrayList<>();
    for (KvrouteServer r : routers) {
      out.add(r.uri());
    }
    return out;
  }

  /** The engines' base URLs, in fleet order. */
  public List<URI> engineUris() {
    List<URI> out = new ArrayList<>();
    for (String u : engines.urls()) {
      out.add(URI.create(u));
    }
    return out;
  }

  @Override
  public void close() {
    try {
      for (KvrouteServer r : routers) {
        r.close();
      }
    } finally {
      engines.close();
    }
  }
}
