package dev.kvroute.bench.sim;

import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;

/** Builds the mock engine's configuration for a workload's fleet. */
public final class FleetEngines {
  private FleetEngines() {}

  /**
   * The engine configuration of every replica of {@code fleet}: the {@code fcfs-prefill} scheduler,
   * the linear cost model with the fleet's rates, its KV capacity and block size, and a maximum model
   * length equal to the KV capacity (so no request of the workload is refused for its length).
   */
  public static EngineConfig config(FleetSpec fleet) {
    return EngineConfig.builder()
        .scheduler(EngineConfig.SchedulerKind.FCFS_PREFILL)
        .blockSizeTokens(fleet.blockSizeTokens())
        .kvCapacityTokens(fleet.kvCapacityTokens())
        .maxModelLen(Math.toIntExact(Math.min(Integer.MAX_VALUE, fleet.kvCapacityTokens())))
        .cost(
            CostModel.linear(
                fleet.prefillTokensPerSecond(),
                fleet.prefillOverheadSeconds(),
                fleet.decodeTokensPerSecond()))
        .build();
  }
}
