package dev.kvroute.bench.load;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How well routers' prefix indexes predicted the engines' caches over a run: the cached prompt tokens
 * they credited the chosen backends with against the cached tokens the engines then reported
 * ({@code usage.prompt_tokens_details.cached_tokens}), summed over every finished request and router.
 * Read from each router's {@code kvroute_index_cached_tokens_sum{mode, source}} series, which count
 * from the router's start (a fresh router per run measures that run).
 *
 * <p>Immutable and thread-safe.
 *
 * @param predictedCachedTokens cached tokens the indexes predicted
 * @param reportedCachedTokens cached tokens the engines reported
 */
public record IndexAccuracy(long predictedCachedTokens, long reportedCachedTokens) {
  private static final Pattern SERIES =
      Pattern.compile("(?m)^kvroute_index_cached_tokens_sum\\{([^}]*)\\} (\\S+)$");

  /** Predicted over reported cached tokens: 1 is exact, above 1 the index believed in evicted pages. */
  public double ratio() {
    return reportedCachedTokens == 0 ? 0 : (double) predictedCachedTokens / reportedCachedTokens;
  }

  /**
   * {@link #ratio()} to three decimals, or {@code -} when nothing was predicted: a policy that reads no
   * prefix match ({@code round-robin}, {@code sticky}...) leaves the index alone and predicts nothing.
   */
  public String ratioText() {
    return predictedCachedTokens == 0 ? "-" : String.format(java.util.Locale.ROOT, "%.3f", ratio());
  }

  /** Both sums of {@code routers} added. */
  public IndexAccuracy plus(IndexAccuracy other) {
    return new IndexAccuracy(
        predictedCachedTokens + other.predictedCachedTokens, reportedCachedTokens + other.reportedCachedTokens);
  }

  /** The sums in one router's Prometheus text, over every index mode. */
  static IndexAccuracy parse(String metrics) {
    long predicted = 0;
    long reported = 0;
    Matcher m = SERIES.matcher(metrics);
    while (m.find()) {
      long v = Math.round(Double.parseDouble(m.group(2)));
      if (m.group(1).contains("source=\"predicted\"")) {
        predicted += v;
      } else if (m.group(1).contains("source=\"reported\"")) {
        reported += v;
      }
    }
    return new IndexAccuracy(predicted, reported);
  }

  /**
   * Reads every router's {@code /metrics} and adds their sums.
   *
   * @throws IOException if a router does not answer 200
   * @throws InterruptedException if interrupted
   */
  public static IndexAccuracy scrape(List<URI> routers) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    IndexAccuracy sum = new IndexAccuracy(0, 0);
    for (URI r : routers) {
      HttpResponse<String> res =
          http.send(
              HttpRequest.newBuilder(r.resolve("/metrics")).timeout(Duration.ofSeconds(30)).GET().build(),
              HttpResponse.BodyHandlers.ofString());
      if (res.statusCode() != 200) {
        throw new IOException("GET " + r.resolve("/metrics") + ": HTTP " + res.statusCode());
      }
      sum = sum.plus(parse(res.body()));
    }
    return sum;
  }
}
