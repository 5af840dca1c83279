package dev.kvroute.bench.load;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class EngineMetricsTest {
  @Test
  void sumsTheBenchCountersOverLabelSets() {
    String text =
        "# HELP vllm:request_prefill_time_seconds Histogram of time spent in PREFILL phase.\n"
            + "# TYPE vllm:request_prefill_time_seconds histogram\n"
            + "vllm:request_prefill_time_seconds_bucket{engine=\"0\",le=\"0.3\",model_name=\"m\"} 3.0\n"
            + "vllm:request_prefill_time_seconds_sum{engine=\"0\",model_name=\"m\"} 12.5\n"
            + "vllm:request_prefill_time_seconds_sum{engine=\"1\",model_name=\"m\"} 0.5\n"
            + "vllm:request_prefill_time_seconds_count{engine=\"0\",model_name=\"m\"} 7.0\n"
            + "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m{x}\"} 480.0\n"
            + "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1.2e3 1700000000000\n"
            + "vllm:prefix_cache_hits_created{engine=\"0\",model_name=\"m\"} 1.7e9\n";
    EngineMetrics m = EngineMetrics.parse(text);
    assertThat(m).isEqualTo(new EngineMetrics(13.0, 480.0, 1200.0, 0, 0));
    assertThat(m.hitRate()).isEqualTo(0.4);
    assertThat(m.minus(new EngineMetrics(3, 80, 200, 0, 0))).isEqualTo(new EngineMetrics(10, 400, 1000, 0, 0));
  }

  @Test
  void acceptsNamesWithoutTotal() {
    assertThat(EngineMetrics.parse("vllm:prefix_cache_hits 5\nvllm:prefix_cache_queries 10\n").hitRate())
        .isEqualTo(0.5);
  }
}
