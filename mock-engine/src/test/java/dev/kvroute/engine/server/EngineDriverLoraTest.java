package dev.kvroute.engine.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.data.Offset.offset;
import static org.awaitility.Awaitility.await;

import dev.kvroute.engine.model.CostModel;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import dev.kvroute.engine.model.EngineStats;
import dev.kvroute.engine.model.LoraSlots;
import io.netty.channel.DefaultEventLoop;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The mock engine's adapter slots in wall time: what it reports, and when a loaded adapter's request starts. */
class EngineDriverLoraTest {
  static final double K = 10;
  /** One adapter slot, 0.5 model s (50 wall ms) to load an adapter. */
  static final long LOAD_NANOS = 500_000_000L;

  final DefaultEventLoop loop = new DefaultEventLoop();
  final EngineMetrics metrics = new EngineMetrics("m", "0");
  final EngineDriver driver =
      new EngineDriver(
          loop,
          EngineModel.create(EngineConfig.builder().cost(CostModel.linear(10_000, 0.02, 100)).numGpuBlocks(100).build()),
          K, System.nanoTime(), metrics, null, 0, new LoraSlots(1, LOAD_NANOS));
  final AtomicInteger finished = new AtomicInteger();

  @AfterEach
  void stop() {
    loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
  }

  /**
   * vLLM's scheduler leaves a request that would exceed {@code max_loras} in its waiting queue, so
   * {@code vllm:num_requests_waiting} counts it; the mock left such requests out (a router reading the
   * engine's queue saw it idle while requests waited for a slot). A request whose adapter loads is
   * running (vLLM loads the adapter in the step that runs it).
   */
  @Test
  void requestsWaitingForAnAdapterSlotCountAsWaiting() throws Exception {
    // all in one task on the loop, before the load's 50 wall ms are up
    record Seen(EngineStats stats, List<String> waitingAdapters, String text) {}
    Seen seen = loop.submit(() -> {
      driver.submit(new EngineRequest[] {request("sql")}, sink()); // takes the one slot, loads
      driver.submit(new EngineRequest[] {request("chat"), request("chat")}, sink()); // waits for the slot
      return new Seen(driver.stats(), driver.waitingAdapters(),
          metrics.render(driver.stats(), EngineConfig.builder().build(), 0, K));
    }).get();
    assertThat(seen.stats().running()).as("running: the request whose adapter loads").isEqualTo(1);
    assertThat(seen.stats().waiting()).as("waiting: both choices of the request waiting for a slot").isEqualTo(2);
    assertThat(seen.waitingAdapters()).as("waiting_lora_adapters").containsExactly("chat");
    assertThat(seen.text()).contains("vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2")
        .contains("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1");

    await().atMost(Duration.ofSeconds(20)).until(() -> finished.get() == 3);
    LoraSlots.Stats slots = loop.submit(() -> driver.loraSlots().stats()).get();
    assertThat(slots.requests()).isEqualTo(2);
    assertThat(slots.loads()).isEqualTo(2);
    assertThat(slots.slotWaits()).isEqualTo(1);
    assertThat(slots.loadWaits()).isEqualTo(2);
    assertThat(slots.loadWaitNanos()).isEqualTo(2 * LOAD_NANOS);
    String after = loop.submit(() -> metrics.renderLora(driver.loraSlots(), driver.waitingAdapters())).get();
    assertThat(after).contains("kvroute_mock_lora_loads_total{model_name=\"m\"} 2")
        .contains("kvroute_mock_lora_slot_waits_total{model_name=\"m\"} 1")
        .contains("kvroute_mock_lora_load_wait_seconds_total{model_name=\"m\"} 1");
  }

  /**
   * The adapter's load ended on a wall-clock timer, and the request was submitted at the model time
   * the timer ran: a loop busy past the load's end delayed the request by that much model time (only
   * adapter requests, so a busy machine made them slower than the simulator's). The load's end is now
   * an event of the model clock, like the model's own.
   */
  @Test
  void aBusyLoopDoesNotDelayARequestWhoseAdapterLoadedInModelTime() throws Exception {
    // the load ends 0.5 model s = 50 wall ms after submission; the loop is busy for 300 wall ms
    loop.submit(() -> {
      driver.submit(new EngineRequest[] {request("sql")}, sink());
      long until = System.nanoTime() + 300_000_000L;
      while (System.nanoTime() < until) {
        Thread.onSpinWait();
      }
    }).get();
    await().atMost(Duration.ofSeconds(20)).until(() -> finished.get() == 1);
    double ttft = loop.submit(() -> metrics.ttft.sum).get();
    // the load (0.5 s) plus the prefill of 4 tokens (0.02 s + 4 / 10,000 s); not the 3 s the loop was busy
    assertThat(ttft).isCloseTo(0.5 + 0.02 + 4 / 10_000.0, offset(0.01));
  }

  private EngineRequest request(String adapter) {
    return new EngineRequest(driver.reserveIds(1), new int[] {1, 2, 3, 4}, new int[] {5, 6}, EngineRequest.LENGTH,
        adapter);
  }

  private EngineDriver.Sink sink() {
    return new EngineDriver.Sink() {
      @Override
      public void onFirstToken(long engineId, int cachedTokens) {}

      @Override
      public void onToken(long engineId, int index) {}

      @Override
      public void onFinished(long engineId, String reason) {
        finished.incrementAndGet();
      }

      @Override
      public void flush() {}
    };
  }
}
