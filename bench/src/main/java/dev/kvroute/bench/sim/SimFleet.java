package dev.kvroute.bench.sim;

import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.core.BackendId;
import dev.kvroute.engine.model.EngineModel;
import java.util.ArrayList;
import java.util.List;

/**
 * What a policy's router is built over in the simulator: the fleet's spec, its engine models (read
 * only by the oracle) and the virtual clock. Backend {@code i} is named {@code engine-i}.
 *
 * @param spec replicas, capacity and timing
 * @param engines the engine models, in fleet order
 * @param clock the run's virtual clock
 * @param models the fleet's models and adapters, or {@code null} when every replica serves one model
 */
record SimFleet(FleetSpec spec, List<EngineModel> engines, VirtualClock clock, Models models) {
  /**
   * The models of a multi-model fleet, as the router sees them.
   *
   * @param plan which replica serves which base model, and each session's model or adapter
   * @param gates each replica's adapter slots, in fleet order (the router reads their state as the
   *     proxy reads {@code vllm:lora_requests_info})
   * @param loraAffinity whether routing prefers the replicas running a request's adapter ({@code
   *     --lora-affinity})
   * @param scraped whether the router reads the gates' state as last scraped ({@link
   *     LoraGate#reported}) rather than live
   */
  record Models(ModelPlan plan, List<LoraGate> gates, boolean loraAffinity, boolean scraped) {
    /** The router reads the gates' state live. */
    Models(ModelPlan plan, List<LoraGate> gates, boolean loraAffinity) {
      this(plan, gates, loraAffinity, false);
    }

    /** The adapter state of replica {@code i} as the router knows it. */
    dev.kvroute.proxy.LoraAffinity.State state(int i) {
      return gates.get(i).reported(scraped);
    }
  }

  SimFleet(FleetSpec spec, List<EngineModel> engines, VirtualClock clock) {
    this(spec, engines, clock, null);
  }

  /** The backend ids, in fleet order. */
  List<BackendId> backends() {
    List<BackendId> ids = new ArrayList<>(engines.size());
    for (int i = 0; i < engines.size(); i++) {
      ids.add(SimPolicies.backendId(i));
    }
    return ids;
  }
}
