package dev.kvroute.engine.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import io.netty.channel.DefaultEventLoop;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The engine's clock lag: how late its timers fire against the model clock, in model seconds. */
class EngineDriverClockLagTest {
  static final double K = 10;

  final DefaultEventLoop loop = new DefaultEventLoop();
  final EngineMetrics metrics = new EngineMetrics("m", "0");
  final EngineDriver driver =
      new EngineDriver(
          loop,
          EngineModel.create(EngineConfig.builder().cost(CostModel.linear(10_000, 0.02, 100)).numGpuBlocks(100).build()),
          K, System.nanoTime(), metrics);
  final AtomicBoolean finished = new AtomicBoolean();

  @AfterEach
  void stop() {
    loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
  }

  @Test
  void aLoopThatKeepsUpShowsOnlySmallLag() throws Exception {
    loop.submit(() -> driver.submit(new EngineRequest[] {request()}, sink())).get();
    await().atMost(Duration.ofSeconds(10)).untilTrue(finished);
    double count = loop.submit(() -> (double) metrics.clockLag.count).get();
    assertThat(count).isPositive();
    String text = loop.submit(() -> metrics.render(driver.model().stats(), EngineConfig.builder().build(), 0, K)).get();
    assertThat(text).contains("# TYPE kvroute_mock_clock_lag_seconds histogram\n")
        .contains("kvroute_mock_clock_lag_seconds_count{engine=\"0\",model_name=\"m\"} ")
        .contains("kvroute_mock_clock_lag_max_seconds{model_name=\"m\"} ");
  }

  @Test
  void aBusyLoopDelaysTheTimerAndTheLagIsItsWallDelayTimesTheScale() throws Exception {
    // the first token is due 20 ms model = 2 ms wall after submission; the loop is busy for 300 ms wall
    loop.submit(() -> {
      driver.submit(new EngineRequest[] {request()}, sink());
      long until = System.nanoTime() + 300_000_000L;
      while (System.nanoTime() < until) {
        Thread.onSpinWait();
      }
    }).get();
    await().atMost(Duration.ofSeconds(10)).untilTrue(finished);
    double max = loop.submit(() -> metrics.clockLagMaxSeconds(System.nanoTime())).get();
    // at least the 298 ms of wall delay, times K = 10
    assertThat(max).isGreaterThanOrEqualTo(2.9);
  }

  private EngineRequest request() {
    return EngineRequest.of(driver.reserveIds(1), new int[] {1, 2, 3, 4}, new int[] {5, 6});
  }

  private EngineDriver.Sink sink() {
    return new EngineDriver.Sink() {
      @Override
      public void onFirstToken(long engineId, int cachedTokens) {}

      @Override
      public void onToken(long engineId, int index) {}

      @Override
      public void onFinished(long engineId, String reason) {
        finished.set(true);
      }

      @Override
      public void flush() {}
    };
  }
}
