package dev.kvroute.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.bench.workload.ModelPlan;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class MultiModelCommandsTest {
  private static final ModelPlan PLAN = ModelPlan.twoModels(4, 32, 4, 0.2, 1, 0.5, 7);

  @Test
  void movedTurnsCountsAdapterTurnsSentToAnotherReplicaThanTheTurnBefore() {
    int adapterSession = -1;
    int baseSession = -1;
    for (int i = 0; i < 32; i++) {
      if (PLAN.binding(i).adapter() != null && adapterSession < 0) {
        adapterSession = i;
      }
      if (PLAN.binding(i).adapter() == null && baseSession < 0) {
        baseSession = i;
      }
    }
    List<RequestRecord> records = new ArrayList<>();
    // the adapter session: engine-2, engine-2, engine-3, engine-2 (moved twice), in completion order
    records.add(record(adapterSession, 2, "engine-2"));
    records.add(record(adapterSession, 0, "engine-2"));
    records.add(record(adapterSession, 1, "engine-2"));
    records.add(record(adapterSession, 3, "engine-3"));
    records.add(record(adapterSession, 4, "engine-2"));
    // a session without an adapter moves too, but is not counted
    records.add(record(baseSession, 0, "engine-0"));
    records.add(record(baseSession, 1, "engine-1"));
    assertThat(MultiModelCommands.movedTurns(PLAN, records)).isEqualTo(2);
    assertThat(MultiModelCommands.movedTurns(PLAN, List.of())).isZero();
  }

  private static RequestRecord record(int session, int turn, String backend) {
    return new RequestRecord(session, turn, turn, 1, 100, 0, backend);
  }
}
