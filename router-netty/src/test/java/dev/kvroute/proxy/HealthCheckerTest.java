package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

final class HealthCheckerTest {
  @Test
  void capacityFromVllmCacheConfigInfo() {
    String text = "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
        + "# TYPE vllm:cache_config_info gauge\n"
        + "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\","
        + "num_cpu_blocks=\"None\",num_gpu_blocks=\"27120\"} 1.0\n";
    assertThat(HealthChecker.parseCapacityTokens(text)).isEqualTo(27120L * 16);
  }

  @Test
  void capacityFromSglangMaxTotalNumTokens() {
    assertThat(HealthChecker.parseCapacityTokens("sglang:max_total_num_tokens{model_name=\"m\"} 434176.0\n"))
        .isEqualTo(434176L);
  }

  @Test
  void noCapacityMetric() {
    assertThat(HealthChecker.parseCapacityTokens("vllm:num_requests_running 0.0\n")).isEqualTo(-1);
  }

  @Test
  void engineStartTimeFromPrometheusClientsProcessCollector() {
    String text = "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
        + "# TYPE process_start_time_seconds gauge\n"
        + "process_start_time_seconds 1.76439185734e+09\n"
        + "vllm:num_requests_running{engine=\"0\"} 0.0\n";
    assertThat(HealthChecker.parseStartSeconds(text)).isEqualTo(1.76439185734e9);
    assertThat(HealthChecker.parseStartSeconds("vllm:num_requests_running 0.0\n")).isNaN();
  }
}
