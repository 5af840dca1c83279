package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code kvroute_prefix_prediction_error_tokens} compares the index's prediction with the engine's
 * report in whole pages of the index: a cached block that fills no whole page is below what the index
 * can predict, not an error of it; the raw predicted and reported series are kept as they came.
 */
final class PredictionErrorMetricTest {

  @Test
  void pagesOfSixtyFourInFrontOfSixteenTokenBlocksCountOnlyWholePagesAsError() {
    ProxyMetrics metrics = new ProxyMetrics("cache-aware");
    // the engine had 11 blocks of 16 (176 tokens): two whole pages of 64, as the index predicted
    metrics.reported("b0", 300, 176, 128, 64);
    // one whole page fewer than the engine had: 64 under, not 112
    metrics.reported("b0", 300, 176, 64, 64);
    // a page more than the engine had (it evicted one behind the router's back): 64 over
    metrics.reported("b0", 300, 48, 64, 64);
    String m = metrics.scrape();
    assertErrors(m, "exact", 1, 0);
    assertErrors(m, "under", 1, 64);
    assertErrors(m, "over", 1, 64);
    // the raw counts stay raw
    assertThat(m).containsPattern("kvroute_index_cached_tokens_sum\\{[^}]*source=\"reported\"[^}]*\\} 400\\.0");
    assertThat(m).containsPattern("kvroute_index_cached_tokens_sum\\{[^}]*source=\"predicted\"[^}]*\\} 256\\.0");
  }

  @Test
  void atThePageOfTheBlockEveryTokenOfDifferenceCounts() {
    ProxyMetrics metrics = new ProxyMetrics("cache-aware");
    metrics.reported("b0", 300, 176, 128, 16);
    // an engine that reports single tokens (SGLang's page of 1) against 16-token pages: 7 below a page
    metrics.reported("b0", 300, 183, 176, 16);
    String m = metrics.scrape();
    assertErrors(m, "under", 1, 48);
    assertErrors(m, "exact", 1, 0);
  }

  /** The prediction error series of {@code direction}: {@code count} requests, {@code sum} tokens in all. */
  private static void assertErrors(String scrape, String direction, int count, int sum) {
    assertThat(series(scrape, "count", direction)).as("requests %s", direction).isEqualTo(count);
    assertThat(series(scrape, "sum", direction)).as("tokens %s", direction).isEqualTo(sum);
  }

  private static double series(String scrape, String kind, String direction) {
    Matcher matcher = Pattern.compile("(?m)^kvroute_prefix_prediction_error_tokens_" + kind
        + "\\{[^}]*direction=\"" + direction + "\"[^}]*\\} (\\S+)$").matcher(scrape);
    assertThat(matcher.find()).as("%s of direction %s in%n%s", kind, direction, scrape).isTrue();
    return Double.parseDouble(matcher.group(1));
  }
}
