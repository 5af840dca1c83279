package dev.kvroute.bench.sim;

import dev.kvroute.bench.workload.FleetSpec;
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
 */
record SimFleet(FleetSpec spec, List<EngineModel> engines, VirtualClock clock) {
  /** The backend ids, in fleet order. */
  List<BackendId> backends() {
    List<BackendId> ids = new ArrayList<>(engines.size());
    for (int i = 0; i < engines.size(); i++) {
      ids.add(SimPolicies.backendId(i));
    }
    return ids;
  }
}
