package dev.kvroute.bench.sim;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.bench.report.ModelBreakdown;
import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.bench.workload.ChatMessage;
import dev.kvroute.bench.workload.ChatRequests;
import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.bench.workload.SeedWorkload;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.engine.model.EngineListener;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import dev.kvroute.engine.model.LoraSlots;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The multi-model workload in the simulator: requests stay on their model's replicas, the index's
 * namespaces keep adapters apart, LoRA affinity narrows the candidates as the proxy's does, adapter
 * slots cost model time, and affine routing beats blind routing on the reduced scenario.
 */
class MultiModelSimulationTest {
  /** 4 replicas (2 per model) × 8 sessions, shorter documents. */
  private static final SeedWorkloadConfig SMALL =
      new SeedWorkloadConfig(
          4, 8, 10, 6_000, 0.5, 6, 0.25, 3, 30, 300, 0.5, 200, 0.6, 5, 6, 15_000, 0.02, 30, 16, 7);

  private static final ModelPlan PLAN = ModelPlan.twoModels(4, SMALL.sessions(), 4, 0.2, 1, 0.5, SMALL.seed());

  private static Simulator simulator() {
    return new Simulator(SimulatorTest.TOKENIZER, SimulatorTest.WORDS, SimPolicies.seedScenario(), 2);
  }

  @Test
  void everyRequestReachesAReplicaServingItsModel() {
    Workload w = SeedWorkload.generate(SMALL, SimulatorTest.TOKENIZER);
    assertThat(PLAN.sessions().stream().filter(b -> b.adapter() != null).map(ModelPlan.Binding::adapter).distinct())
        .hasSizeGreaterThan(1);
    for (Simulator.ModelRun run : simulator().runModels(w, PLAN, List.of("round-robin", "cache-aware", "oracle"))) {
      List<RequestRecord> records = run.result().diagnostics().requests();
      assertThat(records).as(run.label()).hasSize(w.requests());
      for (RequestRecord r : records) {
        int replica = Integer.parseInt(r.backend().substring("engine-".length()));
        assertThat(PLAN.replicaModels().get(replica)).as(run.label()).isEqualTo(PLAN.binding(r.session()).base());
      }
      ModelBreakdown b = ModelBreakdown.of(run.label(), PLAN, records);
      int sum = 0;
      for (ModelBreakdown.Group g : b.groups()) {
        if (!g.name().equals("all")) {
          sum += g.requests();
        }
      }
      assertThat(sum).isEqualTo(w.requests());
      assertThat(b.group(ModelBreakdown.adapters(ModelPlan.MODEL_B)).requests()).isPositive();
    }
  }

  @Test
  void pagesCachedUnderOneAdapterAreNeverPredictedForAnother() {
    ModelPlan plan =
        new ModelPlan(
            List.of(ModelPlan.MODEL_B, ModelPlan.MODEL_B),
            List.of(
                new ModelPlan.Binding(ModelPlan.MODEL_B, "lora-x"), new ModelPlan.Binding(ModelPlan.MODEL_B, "lora-y"),
                new ModelPlan.Binding(ModelPlan.MODEL_B, null)),
            2, 0);
    SimRouter router = router(plan, false, "cache-aware");
    String doc = "a long shared document ".repeat(200);

    SimRouter.Routed first = router.route(view("lora-x", doc));
    SimRouter.Routed again = router.route(view("lora-x", doc));
    SimRouter.Routed other = router.route(view("lora-y", doc));
    SimRouter.Routed base = router.route(view(ModelPlan.MODEL_B, doc));

    assertThat(first.predictedCachedTokens()).isZero();
    assertThat(again.predictedCachedTokens()).isGreaterThan(first.promptTokens().length / 2);
    assertThat(again.replica()).isEqualTo(first.replica());
    assertThat(other.predictedCachedTokens()).isZero();
    assertThat(base.predictedCachedTokens()).isZero();
    assertThat(other.namespace()).isNotEqualTo(again.namespace()).isNotEqualTo(base.namespace());
  }

  @Test
  void aPolicyThatReadsNoPromptStillHandsTheEnginesThePromptsTokens() {
    // round-robin's core neither tokenizes nor indexes, but the simulated engines need the tokens
    ModelPlan plan =
        new ModelPlan(
            List.of(ModelPlan.MODEL_B, ModelPlan.MODEL_B), List.of(new ModelPlan.Binding(ModelPlan.MODEL_B, "lora-x")),
            2, 0);
    SimRouter router = router(plan, false, "round-robin");
    RequestView v = view("lora-x", "a long shared document ".repeat(200));

    SimRouter.Routed first = router.route(v);
    SimRouter.Routed again = router.route(v);

    assertThat(first.promptTokens()).containsExactly(SimulatorTest.TOKENIZER.tokenize(v));
    assertThat(again.replica()).isNotEqualTo(first.replica());
    assertThat(again.predictedCachedTokens()).as("nothing predicted: the index is not read").isZero();
  }

  @Test
  void affinityKeepsAnAdapterOnTheReplicasRunningItUnlessTheyAreBusier() {
    ModelPlan plan =
        new ModelPlan(
            List.of(ModelPlan.MODEL_A, ModelPlan.MODEL_B, ModelPlan.MODEL_B),
            List.of(new ModelPlan.Binding(ModelPlan.MODEL_B, "lora-1"), new ModelPlan.Binding(ModelPlan.MODEL_B, "lora-2")),
            1, 0.5);
    List<LoraGate> gates = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      gates.add(new LoraGate(EngineModel.create(FleetEngines.config(fleet(3))), new LoraSlots(1, 0)));
    }
    gates.get(1).submit(new EngineRequest(1, new int[] {1, 2, 3}, new int[] {4}, EngineRequest.LENGTH, "lora-1"), 0);
    SimFleet.Models affine = new SimFleet.Models(plan, gates, true);
    SimFleet.Models blind = new SimFleet.Models(plan, gates, false);
    ModelPlan.Binding lora1 = plan.binding(0);
    ModelPlan.Binding lora2 = plan.binding(1);

    assertThat(SimPolicies.candidates(affine, lora1, i -> 0, 3)).containsExactly(1);
    assertThat(SimPolicies.candidates(affine, lora2, i -> 0, 3)).containsExactly(2); // replica 1's one slot is busy
    assertThat(SimPolicies.candidates(blind, lora1, i -> 0, 3)).containsExactly(1, 2);
    // the replica running it is more than 3 requests busier: both stay, the policy balances
    assertThat(SimPolicies.candidates(affine, lora1, i -> i == 1 ? 5 : 0, 3)).containsExactly(1, 2);
  }

  @Test
  void aColdAdapterDelaysItsRequestByTheLoadTimeAndAFullSetOfSlotsQueuesIt() {
    EngineModel engine = EngineModel.create(FleetEngines.config(fleet(1)));
    long load = 500_000_000L;
    LoraGate gate = new LoraGate(engine, new LoraSlots(1, load));
    Map<Long, Long> firstToken = new HashMap<>();
    List<Long> finished = new ArrayList<>();
    Map<Long, Long> finishedAt = new HashMap<>();
    EngineListener listener =
        new EngineListener() {
          @Override
          public void onFirstToken(long id, long now, int cached, long prefill, long queue) {
            firstToken.put(id, now);
          }

          @Override
          public void onToken(long id, long now, int index, int tokenId) {}

          @Override
          public void onFinished(long id, long now, String reason) {
            finished.add(id);
            finishedAt.put(id, now);
            gate.finished(id == 1 ? "lora-1" : id == 3 ? "lora-2" : null, now);
          }
        };
    int[] prompt = new int[64];
    gate.submit(new EngineRequest(1, prompt, new int[] {1, 2}, EngineRequest.LENGTH, "lora-1"), 0);
    gate.submit(new EngineRequest(2, new int[] {9}, new int[] {1}, EngineRequest.LENGTH, null), 0);
    gate.submit(new EngineRequest(3, prompt, new int[] {1}, EngineRequest.LENGTH, "lora-2"), 0);
    assertThat(gate.waiting()).extracting(EngineRequest::id).containsExactly(3L);
    assertThat(gate.state().running()).containsExactly("lora-1");
    assertThat(gate.state().waiting()).containsExactly("lora-2");
    // as the mock engine reports them: loading counts as running, waiting for a slot as waiting
    assertThat(gate.stats().waiting()).isEqualTo(1 + engine.stats().waiting());
    assertThat(gate.stats().running()).isEqualTo(1 + engine.stats().running());
    drain(engine, gate, listener);

    assertThat(firstToken.get(2L)).isLessThan(load); // the base model does not wait
    assertThat(firstToken.get(1L)).isGreaterThanOrEqualTo(load);
    // lora-2 loads once lora-1's request is done, then pays its own load
    assertThat(firstToken.get(3L)).isGreaterThanOrEqualTo(firstToken.get(1L) + load);
    assertThat(finished).containsExactlyInAnyOrder(1L, 2L, 3L);
    assertThat(gate.loads()).isEqualTo(2);
    LoraSlots.Stats slots = gate.slotStats();
    assertThat(slots.requests()).isEqualTo(2);
    assertThat(slots.slotWaits()).isEqualTo(1);
    // request 3 waited from 0 until request 1 finished
    assertThat(slots.slotWaitNanos()).isEqualTo(finishedAt.get(1L));
    assertThat(slots.loadWaits()).isEqualTo(2);
    assertThat(slots.loadWaitNanos()).isEqualTo(2 * load);
  }

  @Test
  void affineRoutingBeatsBlindRoutingOnMeanTtftForCacheAware() {
    Workload w = SeedWorkload.generate(SMALL, SimulatorTest.TOKENIZER);
    List<Simulator.ModelRun> runs = simulator().runModels(w, PLAN, List.of("cache-aware"));
    Simulator.ModelRun affine = runs.get(0);
    Simulator.ModelRun blind = runs.get(1);
    assertThat(affine.loraAffinity()).isTrue();
    assertThat(blind.loraAffinity()).isFalse();
    assertThat(affine.result().figures().policy()).isEqualTo("cache-aware, affine");

    assertThat(affine.result().figures().meanTtftSeconds()).isLessThan(blind.result().figures().meanTtftSeconds());
  }

  private static void drain(EngineModel engine, LoraGate gate, EngineListener listener) {
    while (true) {
      long t = Math.min(engine.nextEventNanos(), gate.nextEventNanos());
      if (t == Long.MAX_VALUE) {
        return;
      }
      gate.advanceTo(t, listener);
    }
  }

  private static FleetSpec fleet(int replicas) {
    return new FleetSpec(replicas, 100_000, 16, 15_000, 0.02, 30);
  }

  private static SimRouter router(ModelPlan plan, boolean affinity, String policy) {
    FleetSpec spec = fleet(plan.replicaModels().size());
    List<EngineModel> engines = new ArrayList<>();
    List<LoraGate> gates = new ArrayList<>();
    for (int i = 0; i < spec.replicas(); i++) {
      EngineModel e = EngineModel.create(FleetEngines.config(spec));
      engines.add(e);
      gates.add(new LoraGate(e, new LoraSlots(plan.maxLoras(), 0)));
    }
    SimFleet fleet = new SimFleet(spec, engines, new VirtualClock(), new SimFleet.Models(plan, gates, affinity));
    return SimPolicies.seedScenario().router(policy, fleet, SimulatorTest.TOKENIZER);
  }

  private static RequestView view(String model, String text) {
    return ChatRequests.view(model, "session-" + model, List.of(ChatMessage.user(text)), 8);
  }
}
