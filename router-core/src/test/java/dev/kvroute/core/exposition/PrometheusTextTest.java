package dev.kvroute.core.exposition;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class PrometheusTextTest {
  /** An excerpt of vLLM 0.11's /metrics (prometheus_client 0.21), histogram cut to three buckets. */
  private static final String VLLM = """
      # HELP python_gc_objects_collected_total Objects collected during gc
      # TYPE python_gc_objects_collected_total counter
      python_gc_objects_collected_total{generation="0"} 12345.0
      # HELP process_start_time_seconds Start time of the process since unix epoch in seconds.
      # TYPE process_start_time_seconds gauge
      process_start_time_seconds 1.76439185734e+09
      # HELP vllm:num_requests_running Number of requests in model execution batches.
      # TYPE vllm:num_requests_running gauge
      vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
      # HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
      # TYPE vllm:cache_config_info gauge
      vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",num_cpu_blocks="None",num_gpu_blocks="27120"} 1.0
      # HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
      # TYPE vllm:time_to_first_token_seconds histogram
      vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="Qwen/Qwen3-8B"} 0.0
      vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="Qwen/Qwen3-8B"} 7.0
      vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 9.0
      vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 9.0
      vllm:time_to_first_token_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 3.25
      # HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
      # TYPE vllm:prefix_cache_hits_total counter
      vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 4096.0
      # HELP vllm:prefix_cache_hits_created Prefix cache hits, in terms of number of cached tokens.
      # TYPE vllm:prefix_cache_hits_created gauge
      vllm:prefix_cache_hits_created{engine="0",model_name="Qwen/Qwen3-8B"} 1.7643918573e+09
      """;

  @Test
  void readsVllmsNamesWithColonsAndSkipsCommentsAndHelp() {
    List<Sample> all = PrometheusText.samples(VLLM);
    assertThat(all).extracting(Sample::name).containsExactly(
        "python_gc_objects_collected_total",
        "process_start_time_seconds",
        "vllm:num_requests_running",
        "vllm:cache_config_info",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:time_to_first_token_seconds_count",
        "vllm:time_to_first_token_seconds_sum",
        "vllm:prefix_cache_hits_total",
        "vllm:prefix_cache_hits_created");
    assertThat(all.get(1)).isEqualTo(Sample.of("process_start_time_seconds", 1.76439185734e9));
    assertThat(all.get(2).labels()).isEqualTo(Map.of("engine", "0", "model_name", "Qwen/Qwen3-8B"));
    assertThat(all.get(2).value()).isEqualTo(3.0);
    Sample info = all.get(3);
    assertThat(info.label("num_gpu_blocks")).isEqualTo("27120");
    assertThat(info.label("block_size")).isEqualTo("16");
    assertThat(info.label("num_cpu_blocks")).isEqualTo("None");
    assertThat(info.label("absent")).isNull();
  }

  @Test
  void readsAHistogramAsItsBucketSumAndCountSeries() {
    List<Sample> buckets = PrometheusText.samples(VLLM, "vllm:time_to_first_token_seconds_bucket"::equals);
    assertThat(buckets).extracting(s -> PrometheusText.parseValue(s.label("le")))
        .containsExactly(0.001, 0.5, Double.POSITIVE_INFINITY);
    assertThat(buckets).extracting(Sample::value).containsExactly(0.0, 7.0, 9.0);
    assertThat(PrometheusText.samples(VLLM, "vllm:time_to_first_token_seconds_sum"::equals))
        .singleElement().extracting(Sample::value).isEqualTo(3.25);
    assertThat(PrometheusText.samples(VLLM, "vllm:time_to_first_token_seconds_count"::equals))
        .singleElement().extracting(Sample::value).isEqualTo(9.0);
  }

  @Test
  void namesFilterSelectsWithoutReadingOtherLines() {
    // the unwanted line is malformed after its name: filtered out before it is read, not an error
    String text = "wanted 1\nunwanted{a=\"unterminated 2\nwanted{x=\"y\"} 3\n";
    assertThat(PrometheusText.samples(text, "wanted"::equals)).extracting(Sample::value).containsExactly(1.0, 3.0);
  }

  @Test
  void labelValuesAreUnescaped() {
    String text = "m{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\",braces=\"}{,=\"} 1\n";
    Sample s = PrometheusText.samples(text).get(0);
    assertThat(s.label("path")).isEqualTo("C:\\dir");
    assertThat(s.label("quote")).isEqualTo("say \"hi\"");
    assertThat(s.label("nl")).isEqualTo("a\nb");
    assertThat(s.label("braces")).isEqualTo("}{,=");
  }

  @Test
  void specialValuesAndTimestamps() {
    String text = """
        a NaN
        b +Inf
        c -Inf
        d 1.5e3 1764391857340
        e -0.25
        f inf
        g\t7\t-12
        """;
    List<Sample> s = PrometheusText.samples(text);
    assertThat(s).extracting(Sample::value).containsExactly(
        Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 1500.0, -0.25,
        Double.POSITIVE_INFINITY, 7.0);
    assertThat(s.get(0).timestampMillis()).isEqualTo(Sample.NO_TIMESTAMP);
    assertThat(s.get(3).timestampMillis()).isEqualTo(1764391857340L);
    assertThat(s.get(6).timestampMillis()).isEqualTo(-12L);
  }

  @Test
  void toleratesBlanksTrailingCommaCrlfAndOpenMetricsExemplars() {
    String text = "  \n\t# indented comment\r\n"
        + "m { a = \"1\" , b=\"2\", } 4\r\n"
        + "n{a=\"1\"}5\n"
        + "requests_total{path=\"/\"} 10 # {trace_id=\"abc\"} 1.0 1764391857.3\n"
        + "# EOF\n";
    List<Sample> s = PrometheusText.samples(text);
    assertThat(s).extracting(Sample::name).containsExactly("m", "n", "requests_total");
    assertThat(s.get(0).labels()).isEqualTo(Map.of("a", "1", "b", "2"));
    assertThat(s.get(0).value()).isEqualTo(4.0);
    assertThat(s.get(1).value()).isEqualTo(5.0);
    assertThat(s.get(2).value()).isEqualTo(10.0);
  }

  @Test
  void aMalformedLineIsSkippedAndTheNextIsRead() {
    String text = """
        unterminated{a="1" 1
        unquoted{a=1} 2
        bad_escape{a="\\t"} 3
        repeated{a="1",a="2"} 4
        no_value
        no_value_after_labels{a="1"}
        bad_value 1.2.3
        java_suffix 1.5d
        hex 0x10
        bad_timestamp 1 12.5
        trailing 1 2 3
        9starts_with_digit 1
        bad-name 1
        {"quoted.utf8.name"} 1
        ok{a="1"} 42
        """;
    assertThat(PrometheusText.samples(text))
        .singleElement()
        .isEqualTo(new Sample("ok", Map.of("a", "1"), 42, Sample.NO_TIMESTAMP));
  }

  @Test
  void emptyTextAndNoTrailingNewline() {
    assertThat(PrometheusText.samples("")).isEmpty();
    assertThat(PrometheusText.samples("# only a comment")).isEmpty();
    assertThat(PrometheusText.samples("last 3")).singleElement().extracting(Sample::value).isEqualTo(3.0);
  }

  @Test
  void parseValueRejectsWhatTheFormatDoesNotWrite() {
    assertThat(PrometheusText.parseValue("+Inf")).isInfinite().isPositive();
    assertThat(PrometheusText.parseValue("-inf")).isInfinite().isNegative();
    assertThat(PrometheusText.parseValue("Infinity")).isInfinite();
    assertThat(PrometheusText.parseValue("NaN")).isNaN();
    assertThat(PrometheusText.parseValue("0.005")).isEqualTo(0.005);
    for (String bad : new String[] {"", "+", "e", "1.5f", "0x1p3", " 1", "1 ", "one", "--1"}) {
      assertThatThrownBy(() -> PrometheusText.parseValue(bad)).as(bad).isInstanceOf(NumberFormatException.class);
    }
  }

  @Test
  void labelsAreImmutable() {
    Sample s = PrometheusText.samples("m{a=\"1\"} 1").get(0);
    assertThatThrownBy(() -> s.labels().put("b", "2")).isInstanceOf(UnsupportedOperationException.class);
  }
}
