package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.load.EngineLoad;
import org.junit.jupiter.api.Test;

final class EngineScrapeTest {
  private static long capacity(String text) {
    return EngineScrape.read(text).capacityTokens();
  }

  private static double startSeconds(String text) {
    return EngineScrape.read(text).startSeconds();
  }

  private static EngineLoad load(String text) {
    return EngineScrape.read(text).load();
  }

  @Test
  void capacityFromVllmCacheConfigInfo() {
    String text = "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
        + "# TYPE vllm:cache_config_info gauge\n"
        + "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\","
        + "num_cpu_blocks=\"None\",num_gpu_blocks=\"27120\"} 1.0\n";
    assertThat(capacity(text)).isEqualTo(27120L * 16);
  }

  @Test
  void capacityFromSglangMaxTotalNumTokens() {
    assertThat(capacity("sglang:max_total_num_tokens{model_name=\"m\"} 434176.0\n"))
        .isEqualTo(434176L);
  }

  @Test
  void noCapacityMetric() {
    assertThat(capacity("vllm:num_requests_running 0.0\n")).isEqualTo(-1);
  }

  @Test
  void engineStartTimeFromPrometheusClientsProcessCollector() {
    String text = "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
        + "# TYPE process_start_time_seconds gauge\n"
        + "process_start_time_seconds 1.76439185734e+09\n"
        + "vllm:num_requests_running{engine=\"0\"} 0.0\n";
    assertThat(startSeconds(text)).isEqualTo(1.76439185734e9);
    assertThat(startSeconds("vllm:num_requests_running 0.0\n")).isNaN();
  }

  @Test
  void engineLoadFromVllmGaugesSummedOverDataParallelEngines() {
    String text = "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        + "# TYPE vllm:num_requests_running gauge\n"
        + "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
        + "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 2.0\n"
        + "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 7.0 1764391857340\n"
        + "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 0.0\n"
        + "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.9\n"
        + "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.5\n"
        + "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.25\n"
        + "vllm:num_requests_running_total 99\n";
    assertThat(load(text)).isEqualTo(new EngineLoad(5, 7, 0.375));
  }

  @Test
  void engineLoadFallsBackToTheDeprecatedKvGaugeAndToSglangNames() {
    assertThat(load(
        "vllm:num_requests_running 1\nvllm:num_requests_waiting 0\nvllm:gpu_cache_usage_perc 0.75\n"))
        .isEqualTo(new EngineLoad(1, 0, 0.75));
    assertThat(load("vllm:num_requests_waiting 4\n")).isEqualTo(new EngineLoad(0, 4, -1));
    assertThat(load("sglang:num_running_reqs{model_name=\"m\",tp_rank=\"0\"} 12.0\n"
        + "sglang:num_queue_reqs{model_name=\"m\",tp_rank=\"0\"} 3.0\n"
        + "sglang:token_usage{model_name=\"m\",tp_rank=\"0\"} 0.62\n"))
        .isEqualTo(new EngineLoad(12, 3, 0.62));
  }

  @Test
  void noEngineLoadInOtherExpositionsOrUnreadableValues() {
    assertThat(load("")).isNull();
    assertThat(load("process_start_time_seconds 1.7e9\nhttp_requests_total 5\n")).isNull();
    assertThat(load("vllm:num_requests_running{engine=\"0\" NaN\n"
        + "vllm:num_requests_waiting -3\nvllm:num_requests_running abc\n")).isNull();
    // a value over 1 is clamped; +Inf and NaN are skipped
    assertThat(load("vllm:num_requests_running +Inf\nvllm:num_requests_waiting 2\n"
        + "vllm:kv_cache_usage_perc 1.2\n")).isEqualTo(new EngineLoad(0, 2, 1.0));
  }

  @Test
  void unreadableNumbersAreAbsentNotErrors() {
    assertThat(startSeconds("process_start_time_seconds +Inf\n")).isNaN();
    assertThat(startSeconds("process_start_time_seconds 1.7.0\n")).isNaN();
    assertThat(startSeconds("process_start_time_seconds -5\n")).isNaN();
    assertThat(capacity("sglang:max_total_num_tokens +Inf\n")).isEqualTo(-1);
    assertThat(capacity("sglang:max_total_num_tokens 1.2.3\n")).isEqualTo(-1);
  }

  @Test
  void onePassReadsLoadStartCapacityAndAdaptersTogether() {
    String text = "# TYPE vllm:lora_requests_info gauge\n"
        + "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"sql\",waiting_lora_adapters=\"\"} "
        + "1.7e9\n"
        + "process_start_time_seconds 1.5e9\n"
        + "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1.0\n"
        + "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"100\"} 1.0\n"
        + "vllm:num_requests_running{engine=\"0\"} 2\n";
    EngineScrape s = EngineScrape.read(text);
    assertThat(s.load()).isEqualTo(new EngineLoad(2, 0, -1));
    assertThat(s.startSeconds()).isEqualTo(1.5e9);
    assertThat(s.capacityTokens()).isEqualTo(1600);
    assertThat(s.lora()).isEqualTo(new LoraAffinity.State(java.util.Set.of("sql"), java.util.Set.of(), 2));
  }

  @Test
  void capacityLabelsThatOverflowOrAreNegativeAreAbsent() {
    assertThat(capacity("vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"99999999999999999999\"} 1\n"))
        .isEqualTo(-1);
    assertThat(capacity("vllm:cache_config_info{block_size=\"-16\",num_gpu_blocks=\"-2\"} 1\n")).isEqualTo(-1);
    assertThat(capacity("vllm:cache_config_info{block_size=\"4611686018427387904\",num_gpu_blocks=\"4\"} 1\n"))
        .isEqualTo(-1);
  }
}
