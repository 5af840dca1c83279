package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The queue deadline under a burst (issue 16's run saw 429s about 3 s after it): one backend with one
 * slot, a long stream holding it, then {@value #BURST} streams opened at once, each on its own
 * connection. Every one of them must get its 429 with {@code Retry-After} and a JSON body, the router's
 * longest time from reading a request to refusing it ({@code kvroute_request_duration_seconds_max},
 * outcome {@code rate_limited}) within a second of the deadline (the bound), and, measured by
 * the client from just before it sent the request, none earlier than the deadline and none more than
 * 10 s after it (lenient: on a busy machine the client's own connecting, writing and reading of 200
 * sockets takes seconds the router cannot see). Leak detection is at Netty's default level while it
 * runs: paranoid tracing costs tens of milliseconds per request, which a burst multiplies.
 */
@ExtendWith(NettyLeakExtension.class)
final class QueueDeadlineBurstIT {
  static final int BURST = 200;
  static final Duration DEADLINE = Duration.ofSeconds(2);

  private static ResourceLeakDetector.Level leakLevel;

  @BeforeAll
  static void measureTheRouterNotTheLeakTracing() {
    leakLevel = ResourceLeakDetector.getLevel(); // paranoid tracing costs tens of ms per request
    ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.SIMPLE);
  }

  @AfterAll
  static void restoreLeakDetection() {
    ResourceLeakDetector.setLevel(leakLevel);
  }

  @Test
  void everyRequestOfABurstIsRefusedWithinASecondOfTheQueueDeadline() throws Exception {
    HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(10)).build();
    try (FakeBackend engine = new FakeBackend("one");
        KvrouteServer router = KvrouteServer.start(OverloadIT.limited(List.of(engine.uri()), 1, 2 * BURST, DEADLINE))) {
      CompletableFuture<HttpResponse<String>> running = http.sendAsync(
          request(router).header("x-fake", "events=2;interval-ms=" + (DEADLINE.toMillis() + 4000)).build(),
          HttpResponse.BodyHandlers.ofString());
      await().atMost(Duration.ofSeconds(10)).until(() -> engine.received.size() == 1);
      long[] tookNanos = new long[BURST];
      List<CompletableFuture<HttpResponse<String>>> burst = new ArrayList<>();
      for (int i = 0; i < BURST; i++) {
        int n = i;
        long t0 = System.nanoTime();
        burst.add(http.sendAsync(request(router).build(), HttpResponse.BodyHandlers.ofString())
            .whenComplete((r, e) -> tookNanos[n] = System.nanoTime() - t0));
      }
      for (CompletableFuture<HttpResponse<String>> f : burst) {
        HttpResponse<String> r = f.get(60, TimeUnit.SECONDS);
        assertThat(r.statusCode()).isEqualTo(429);
        assertThat(r.headers().firstValue("retry-after")).isPresent();
        assertThat(r.headers().firstValue("content-type")).hasValue("application/json");
        assertThat(r.body()).contains("\"code\":\"rate_limit_exceeded\"");
      }
      long[] sorted = tookNanos.clone();
      Arrays.sort(sorted);
      double routerMax = router.scrapeMetrics().lines()
          .filter(l -> l.startsWith("kvroute_request_duration_seconds_max{") && l.contains("outcome=\"rate_limited\""))
          .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).max().orElse(Double.NaN);
      System.out.printf("burst of %d, deadline %d ms: 429 after %d ms (min), %d ms (median), %d ms (max) at the client;"
          + " %.0f ms (max) from read to refusal in the router%n", BURST, DEADLINE.toMillis(), sorted[0] / 1_000_000,
          sorted[BURST / 2] / 1_000_000, sorted[BURST - 1] / 1_000_000, routerMax * 1000);
      assertThat(Duration.ofNanos(sorted[0])).isGreaterThanOrEqualTo(DEADLINE.minusMillis(50));
      assertThat(routerMax).as("the router's longest time from reading a request to its 429, s")
          .isLessThanOrEqualTo(DEADLINE.plusSeconds(1).toMillis() / 1000.0);
      // lenient: the client's own time (connecting, writing, reading 200 sockets) on a busy machine is
      // not the router's; on the shared 2-core machine at load 25 it added 1.5 to 3 s at the median
      assertThat(Duration.ofNanos(sorted[BURST - 1])).as("the last 429 after the client sent its request")
          .isLessThanOrEqualTo(DEADLINE.plusSeconds(10));
      assertThat(engine.received).hasSize(1);
      assertThat(running.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
      assertThat(OverloadIT.metric(router, "kvroute_admission_requests_total{result=\"deadline\"}")).isEqualTo(BURST);
    }
  }

  private static HttpRequest.Builder request(KvrouteServer router) {
    return HttpRequest.newBuilder(router.uri().resolve("/v1/chat/completions"))
        .timeout(Duration.ofSeconds(60)).POST(HttpRequest.BodyPublishers.ofString(OverloadIT.stream("burst")));
  }
}
