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

  @Test
  void readsTheMockEnginesTimeScaleClockLagAndTheKvCapacity() {
    String m = "kvroute_mock_time_scale{model_name=\"m\"} 5.0\n"
        + "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",engine=\"0\",num_gpu_blocks=\"11092\"} 1.0\n"
        + "kvroute_mock_clock_lag_seconds_bucket{le=\"0.001\",model_name=\"m\"} 90.0\n"
        + "kvroute_mock_clock_lag_seconds_bucket{le=\"0.01\",model_name=\"m\"} 99.0\n"
        + "kvroute_mock_clock_lag_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 100.0\n";
    EngineMetrics e = EngineMetrics.parse(m);
    assertThat(e.timeScale()).isEqualTo(5.0);
    assertThat(e.kvCapacityTokens()).isEqualTo(177_472);
    assertThat(e.clockLag().count()).isEqualTo(100);
    assertThat(e.clockLag().quantileUpperBound(0.5)).isEqualTo(0.001);
    assertThat(e.clockLag().quantileUpperBound(0.99)).isEqualTo(0.01);
    assertThat(e.clockLag().quantileUpperBound(1.0)).isEqualTo(Double.POSITIVE_INFINITY);
    // the run's increase: 10 more firings, all late by more than 10 ms
    String later = m.replace("} 100.0", "} 110.0");
    ClockLag run = EngineMetrics.parse(later).minus(e).clockLag();
    assertThat(run.count()).isEqualTo(10);
    assertThat(run.quantileUpperBound(0.99)).isEqualTo(Double.POSITIVE_INFINITY);
    assertThat(EngineMetrics.parse("vllm:prefix_cache_hits 5\n").timeScale()).isNaN();
    assertThat(EngineMetrics.parse("vllm:prefix_cache_hits 5\n").clockLag().count()).isZero();
  }

  @Test
  void aMalformedLineOrBucketBoundCostsOnlyItself() {
    String text = "vllm:prefix_cache_hits_total{model_name=\"a \\\"quoted\\\" name\"} 5\n"
        + "vllm:prefix_cache_queries_total{model_name=\"m\" 99\n"
        + "vllm:prefix_cache_queries_total 10\n"
        + "kvroute_mock_clock_lag_seconds_bucket{le=\"soon\"} 3\n"
        + "kvroute_mock_clock_lag_seconds_bucket{le=\"+Inf\"} 4\n";
    EngineMetrics m = EngineMetrics.parse(text);
    assertThat(m.prefixCacheHits()).isEqualTo(5);
    assertThat(m.prefixCacheQueries()).isEqualTo(10);
    assertThat(m.clockLag().cumulative()).containsOnlyKeys(Double.POSITIVE_INFINITY);
  }
}
