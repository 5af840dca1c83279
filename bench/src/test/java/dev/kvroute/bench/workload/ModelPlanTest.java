package dev.kvroute.bench.workload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class ModelPlanTest {
  @Test
  void halfTheReplicasServeEachModelAndAdaptersFollowZipf() {
    ModelPlan plan = ModelPlan.twoModels(8, 4_000, 8, 0.2, 2, 0.5, 42);

    assertThat(plan.replicasOf(ModelPlan.MODEL_A)).containsExactly(0, 1, 2, 3);
    assertThat(plan.replicasOf(ModelPlan.MODEL_B)).containsExactly(4, 5, 6, 7);
    Map<String, Long> bySession =
        plan.sessions().stream().collect(Collectors.groupingBy(ModelPlan.Binding::served, Collectors.counting()));
    assertThat(bySession.get(ModelPlan.MODEL_A)).isBetween(1_800L, 2_200L);
    assertThat(bySession.get(ModelPlan.MODEL_B)).isBetween(300L, 500L); // 20% of model B's ~2000
    // Zipf with exponent 1: adapter 1 about twice as popular as adapter 2, 8 times adapter 8
    long first = bySession.get(ModelPlan.adapterName(1));
    assertThat((double) first / bySession.get(ModelPlan.adapterName(2))).isBetween(1.6, 2.5);
    assertThat((double) first / bySession.get(ModelPlan.adapterName(8))).isBetween(5.0, 12.0);
    assertThat(plan.resolve(ModelPlan.adapterName(3))).isEqualTo(new ModelPlan.Binding(ModelPlan.MODEL_B, "model-b-lora-3"));
    assertThat(plan.resolve("unknown")).isNull();
  }

  @Test
  void theSameSeedGivesTheSamePlan() {
    Function<Long, List<ModelPlan.Binding>> plan = s -> ModelPlan.twoModels(8, 128, 8, 0.2, 2, 0.5, s).sessions();
    assertThat(plan.apply(1L)).isEqualTo(plan.apply(1L)).isNotEqualTo(plan.apply(2L));
  }

  @Test
  void outOfRangeValuesAreRefusedWithWhatWasExpected() {
    assertThatThrownBy(() -> ModelPlan.twoModels(1, 10, 8, 0.2, 2, 0.5, 1)).hasMessageContaining("replicas: 1");
    assertThatThrownBy(() -> ModelPlan.twoModels(8, 10, 0, 0.2, 2, 0.5, 1)).hasMessageContaining("adapters: 0");
    assertThatThrownBy(() -> ModelPlan.twoModels(8, 10, 8, 1.5, 2, 0.5, 1)).hasMessageContaining("in [0, 1]");
    assertThatThrownBy(() -> ModelPlan.twoModels(8, 10, 8, 0.2, 0, 0.5, 1)).hasMessageContaining("maxLoras: 0");
    assertThatThrownBy(() -> ModelPlan.twoModels(8, 10, 8, 0.2, 2, -1, 1)).hasMessageContaining("loraLoadSeconds");
  }
}
