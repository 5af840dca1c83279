package dev.kvroute.bench.load;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class IndexAccuracyTest {
  @Test
  void sumsPredictedAndReportedOverEveryIndexMode() {
    String metrics = """
        # HELP kvroute_index_cached_tokens Cached prompt tokens of finished requests
        # TYPE kvroute_index_cached_tokens summary
        kvroute_index_cached_tokens_count{mode="precise",source="predicted"} 3
        kvroute_index_cached_tokens_sum{mode="precise",source="predicted"} 4800.0
        kvroute_index_cached_tokens_sum{mode="precise",source="reported"} 3200.0
        kvroute_index_cached_tokens_sum{mode="approximate",source="predicted"} 160.0
        kvroute_index_cached_tokens_sum{mode="approximate",source="reported"} 0.0
        kvroute_engine_cached_tokens_sum{backend="engine-0"} 99999.0
        """;
    IndexAccuracy a = IndexAccuracy.parse(metrics);
    assertThat(a).isEqualTo(new IndexAccuracy(4960, 3200));
    assertThat(a.ratio()).isEqualTo(1.55);
    assertThat(a.plus(new IndexAccuracy(40, 800)).ratio()).isEqualTo(1.25);
    assertThat(IndexAccuracy.parse("").ratio()).as("nothing reported").isZero();
  }
}
