package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** llm-d's lora-affinity scores from vLLM's lora_requests_info, and the candidates they leave. */
class LoraAffinityTest {
  static final String METRICS = "# HELP vllm:lora_requests_info Running stats on lora requests.\n"
      + "# TYPE vllm:lora_requests_info gauge\n"
      + "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"sql,chat\",waiting_lora_adapters=\"math\"}"
      + " 1.7e9\n";

  static Backend with(String name, LoraAffinity.State s) {
    Backend b = ModelCatalogTest.backend(name, ServedModels.UNKNOWN);
    b.lora(s);
    return b;
  }

  @Test
  void vllmsGaugeGivesRunningWaitingAndSlots() {
    LoraAffinity.State s = LoraAffinity.parse(METRICS);
    assertThat(s.running()).containsExactlyInAnyOrder("sql", "chat");
    assertThat(s.waiting()).containsExactly("math");
    assertThat(s.maxLoras()).isEqualTo(2);
    assertThat(LoraAffinity.parse("vllm:num_requests_running 0\n")).isEqualTo(LoraAffinity.State.UNKNOWN);
    LoraAffinity.State idle = LoraAffinity.parse(
        "vllm:lora_requests_info{max_lora=\"1\",running_lora_adapters=\"\",waiting_lora_adapters=\"\"} 1.0\n");
    assertThat(idle.running()).isEmpty();
    assertThat(idle.maxLoras()).isEqualTo(1);
  }

  /**
   * vLLM keeps one series per label combination ever set, its value the sample's unix time: the
   * router read the union of all of them (every adapter ever run looked running, slots added up).
   */
  @Test
  void onlyTheLatestOfVllmsAccumulatedSeriesIsTheState() {
    String text = "# TYPE vllm:lora_requests_info gauge\n"
        + "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"sql,chat\",waiting_lora_adapters=\"math\"} 1.7000001e9\n"
        + "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"math\",waiting_lora_adapters=\"\"} 1.7000003e9\n"
        + "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"\",waiting_lora_adapters=\"\"} 1.7000002e9\n";
    LoraAffinity.State s = LoraAffinity.parse(text);
    assertThat(s.running()).containsExactly("math");
    assertThat(s.waiting()).isEmpty();
    assertThat(s.maxLoras()).isEqualTo(2);
    assertThat(LoraAffinity.score(s, "sql")).isEqualTo(0.8); // a free slot, not "running" from an old line

    // data-parallel: each engine's latest line, then merged (slots added)
    String dp = "vllm:lora_requests_info{engine=\"0\",max_lora=\"1\",running_lora_adapters=\"sql\",waiting_lora_adapters=\"\"} 5\n"
        + "vllm:lora_requests_info{engine=\"0\",max_lora=\"1\",running_lora_adapters=\"chat\",waiting_lora_adapters=\"\"} 7\n"
        + "vllm:lora_requests_info{engine=\"1\",max_lora=\"1\",running_lora_adapters=\"math\",waiting_lora_adapters=\"\"} 6\n";
    LoraAffinity.State merged = LoraAffinity.parse(dp);
    assertThat(merged.running()).containsExactlyInAnyOrder("chat", "math");
    assertThat(merged.maxLoras()).isEqualTo(2);
  }

  @Test
  void scoresAreLlmDs() {
    LoraAffinity.State full = LoraAffinity.parse(METRICS);
    assertThat(LoraAffinity.score(full, "sql")).isEqualTo(1.0);
    assertThat(LoraAffinity.score(full, "math")).isEqualTo(0.6); // slots full, already waiting
    assertThat(LoraAffinity.score(full, "other")).isEqualTo(0.0);
    assertThat(LoraAffinity.score(new LoraAffinity.State(Set.of("sql"), Set.of(), 2), "other")).isEqualTo(0.8);
    assertThat(LoraAffinity.score(LoraAffinity.State.UNKNOWN, "sql")).isEqualTo(0.8);
  }

  @Test
  void theReplicasRunningTheAdapterAreKeptUntilTheyAreTooBusy() {
    Backend running = with("r", new LoraAffinity.State(Set.of("sql"), Set.of(), 1));
    Backend full = with("f", new LoraAffinity.State(Set.of("chat"), Set.of(), 1));
    Backend free = with("x", new LoraAffinity.State(Set.of(), Set.of(), 2));
    List<Backend> all = List.of(running, full, free);
    Map<Backend, Integer> load = new java.util.HashMap<>(Map.of(running, 3, full, 0, free, 1));
    assertThat(LoraAffinity.prefer(all, "sql", load::get, 4)).containsExactly(running);
    assertThat(LoraAffinity.prefer(all, "math", load::get, 4)).containsExactly(free); // a free slot beats a full one
    assertThat(LoraAffinity.prefer(all, null, load::get, 4)).isSameAs(all); // a base-model request
    load.put(running, 5); // 5 - 0 > 4: too busy, every candidate stays
    assertThat(LoraAffinity.prefer(all, "sql", load::get, 4)).isSameAs(all);
    assertThat(LoraAffinity.prefer(List.of(free, with("y", LoraAffinity.State.UNKNOWN)), "sql", b -> 0, 4))
        .hasSize(2); // equal scores: nothing to prefer
  }
}
