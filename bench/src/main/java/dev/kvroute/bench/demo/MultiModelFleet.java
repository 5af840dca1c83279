package dev.kvroute.bench.demo;

import dev.kvroute.bench.sim.FleetEngines;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.engine.server.MockEngineFleet;
import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.engine.server.ModelOptions;
import dev.kvroute.proxy.KvrouteServer;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.ModelsConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * A fresh in-process fleet for one real run of the multi-model workload: per base model of the
 * {@link ModelPlan}, its replicas as mock engines serving that model, model B's with its adapters
 * loaded at start ({@code --lora-modules model-b-lora-k=/loras/model-b-lora-k}), {@code --max-loras}
 * and the adapter load time of the plan; and a kvroute router in front of all of them that discovers
 * who serves what from their {@code GET /v1/models}, reads their adapter slots from {@code
 * vllm:lora_requests_info} every {@code engineLoadInterval}, and runs the policy with LoRA affinity on
 * or off. Everything listens on loopback, on ephemeral ports; engine {@code i} is backend {@code
 * engine-i}, as in the simulator.
 *
 * <p>Thread-safe; close it to stop the router and the engines.
 */
public final class MultiModelFleet implements AutoCloseable {
  private final List<MockEngineFleet> groups;
  private final List<URI> engineUris;
  private final KvrouteServer router;

  private MultiModelFleet(List<MockEngineFleet> groups, List<URI> engineUris, KvrouteServer router) {
    this.groups = groups;
    this.engineUris = engineUris;
    this.router = router;
  }

  /**
   * Starts the engines and the router.
   *
   * @param fleet the replicas' capacity and timing (its replica count must be the plan's)
   * @param plan which replica serves which base model, and the adapters' slots and load time
   * @param adapters the adapters model B's engines load at start (the plan's sessions use some of them)
   * @param policy a policy a real router runs (not {@code oracle})
   * @param loraAffinity the router's {@code --lora-affinity}
   * @param engineLoadInterval how often the router scrapes each engine's {@code /metrics} (its adapter
   *     slots among them), wall time, at least 100 ms
   * @param timeScale the engines' K: model seconds per wall second
   * @param tokenizer the router's prompt tokenizer
   * @throws IllegalArgumentException if the plan does not fit the fleet
   */
  public static MultiModelFleet start(
      FleetSpec fleet, ModelPlan plan, List<String> adapters, String policy, boolean loraAffinity,
      Duration engineLoadInterval, SimPolicies policies, double timeScale, PromptTokenizer tokenizer) {
    if (plan.replicaModels().size() != fleet.replicas()) {
      throw new IllegalArgumentException("plan: " + plan.replicaModels().size() + " replicas (expected: the fleet's "
          + fleet.replicas() + ")");
    }
    List<MockEngineFleet> groups = new ArrayList<>();
    URI[] uris = new URI[fleet.replicas()];
    try {
      for (String base : new TreeSet<>(plan.replicaModels())) {
        List<Integer> replicas = plan.replicasOf(base);
        Map<String, String> loras = new LinkedHashMap<>();
        if (ModelPlan.MODEL_B.equals(base)) {
          for (String a : adapters) {
            loras.put(a, "/loras/" + a);
          }
        }
        MockEngineOptions options =
            MockEngineOptions.builder()
                .host(BundledFleet.LOOPBACK)
                .port(0)
                .modelName(base)
                .models(new ModelOptions(List.of(), loras, plan.maxLoras(), false, plan.loraLoadSeconds()))
                .engine(FleetEngines.config(fleet))
                .timeScale(timeScale)
                .enablePromptTokensDetails(true)
                .tokenizer(tokenizer.tokenizer().name())
                .build();
        MockEngineFleet group = MockEngineFleet.start(options, replicas.size());
        groups.add(group);
        for (int j = 0; j < replicas.size(); j++) {
          uris[replicas.get(j)] = URI.create(group.urls().get(j));
        }
      }
      List<BackendConfig> backends = new ArrayList<>();
      for (int i = 0; i < uris.length; i++) {
        backends.add(new BackendConfig(uris[i], SimPolicies.backendId(i).name(), fleet.kvCapacityTokens()));
      }
      ProxyConfig config = routerConfig(policy, backends, loraAffinity, engineLoadInterval, policies);
      RouterCore core = policies.core(policy, policies.pageSizeTokens(policy, fleet.blockSizeTokens()), tokenizer, Ticker.system());
      KvrouteServer router = KvrouteServer.start(config, core);
      return new MultiModelFleet(groups, List.of(uris), router);
    } catch (RuntimeException e) {
      groups.forEach(MockEngineFleet::close);
      throw e;
    }
  }

  /**
   * The demo router's configuration ({@link BundledFleet#routerConfig}) with LoRA affinity, the scrape
   * interval, and the policy configuration of {@code policies} (the one its core runs and the
   * simulator runs): the proxy reads LoRA affinity's allowance from it ({@code
   * policy.balanceAbsThreshold}), as the simulator reads it from {@code policies}.
   */
  static ProxyConfig routerConfig(
      String policy, List<BackendConfig> backends, boolean loraAffinity, Duration engineLoadInterval,
      SimPolicies policies) {
    ProxyConfig c = BundledFleet.routerConfig(policy, backends);
    c = c.withPolicy(policies.config().withName(c.policy().name()));
    ModelsConfig m = c.models();
    HealthCheckConfig h = c.healthCheck();
    return c.withModels(new ModelsConfig(m.refreshInterval(), m.maxCharsPerToken(), loraAffinity, m.aliases()))
        .withHealthCheck(new HealthCheckConfig(
            h.enabled(), h.path(), h.interval(), h.timeout(), h.unhealthyThreshold(), h.healthyThreshold(),
            engineLoadInterval));
  }

  /** The router's base URL. */
  public URI routerUri() {
    return router.uri();
  }

  /** The engines' base URLs, in fleet order. */
  public List<URI> engineUris() {
    return engineUris;
  }

  @Override
  public void close() {
    try {
      router.close();
    } finally {
      groups.forEach(MockEngineFleet::close);
    }
  }
}
