package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.RouterCore;
import dev.kvroute.proxy.config.AdmissionConfig;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ConfigLoader;
import dev.kvroute.proxy.config.ProxyConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.channel.EventLoop;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.concurrent.MockTicker;
import io.netty.util.concurrent.Ticker;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * When the router's queue refuses a request at its deadline, on a mock clock shared by the admission
 * code and the event loop that runs its timer: the refusal comes at the deadline counted from when the
 * router read the request, not later (the overload run of issue 16 saw 429s about 3 s after the
 * deadline).
 */
class AdmissionDeadlineTest {
  private final MockTicker clock = Ticker.newMockTicker();
  private EmbeddedChannel channel;
  private Admission admission;
  private final List<String> events = new ArrayList<>();

  @BeforeEach
  void setUp() {
    channel = EmbeddedChannel.builder().ticker(clock).build();
    ProxyConfig config = ConfigLoader.parse("", Map.of())
        .withAdmission(AdmissionConfig.defaults().withMaxConcurrencyPerBackend(1)
            .withQueue(10, 1 << 20, Duration.ofSeconds(1)));
    RouterCore core = KvrouteServer.createCore(config);
    BackendRegistry backends = new BackendRegistry(config, core, new ProxyMetrics("round-robin"), clock::nanoTime);
    backends.add(new BackendConfig(URI.create("http://127.0.0.1:9"), "only", 1 << 20));
    admission = new Admission(config.admission(), backends, core.loads(), clock::nanoTime, channel.eventLoop(),
        new SimpleMeterRegistry());
  }

  @AfterEach
  void tearDown() {
    channel.finishAndReleaseAll();
  }

  private Admission.Waiter waiter(String name) {
    EventLoop loop = channel.eventLoop();
    return new Admission.Waiter() {
      @Override
      public EventLoop loop() {
        return loop;
      }

      @Override
      public void admitted() {
        events.add(name + " admitted at " + TimeUnit.NANOSECONDS.toMillis(clock.nanoTime() - clock.initialNanoTime()));
      }

      @Override
      public void refused(String reason, String message, long retryAfterSeconds) {
        events.add(name + " " + reason + " at " + TimeUnit.NANOSECONDS.toMillis(clock.nanoTime() - clock.initialNanoTime()));
      }
    };
  }

  @SuppressWarnings("unchecked")
  private Admission.Decision admit(String name, long receivedNanos) {
    return admission.admit(waiter(name), () -> 0, "t", 10, receivedNanos, new dev.kvroute.core.admission.AdmissionQueue.Ticket[1]);
  }

  /** Moves the clock by {@code millis}, one millisecond at a time, running what falls due. */
  private void advance(long millis) {
    for (long i = 0; i < millis; i++) {
      clock.advance(1, TimeUnit.MILLISECONDS);
      channel.runScheduledPendingTasks();
      channel.runPendingTasks();
    }
  }

  @Test
  void aQueuedRequestIsRefusedAtItsDeadlineCountedFromWhenTheRouterReadIt() {
    assertThat(admit("first", clock.nanoTime())).isEqualTo(Admission.Decision.NOW); // takes the only slot
    long read = clock.nanoTime();
    advance(400); // parsing, tokenizing, waiting for its event loop: before it reaches the queue
    assertThat(admit("second", read)).isEqualTo(Admission.Decision.QUEUED);
    advance(599);
    assertThat(events).isEmpty();
    advance(1);
    assertThat(events).containsExactly("second deadline at 1000");
  }

  @Test
  void theDeadlineTimerFiresAtTheDeadlineNotAtTheNextTickAfterIt() {
    admit("first", clock.nanoTime());
    advance(37);
    assertThat(admit("second", clock.nanoTime())).isEqualTo(Admission.Decision.QUEUED);
    advance(50);
    assertThat(admit("third", clock.nanoTime())).isEqualTo(Admission.Decision.QUEUED);
    advance(949);
    assertThat(events).isEmpty();
    advance(1);
    assertThat(events).containsExactly("second deadline at 1037");
    advance(49);
    assertThat(events).hasSize(1);
    advance(1);
    assertThat(events).containsExactly("second deadline at 1037", "third deadline at 1087");
  }

  @Test
  void aRequestReadLongerAgoThanTheDeadlineIsRefusedAtOnce() {
    admit("first", clock.nanoTime());
    long read = clock.nanoTime();
    advance(1500);
    assertThat(admit("late", read)).isEqualTo(Admission.Decision.QUEUED);
    channel.runScheduledPendingTasks();
    channel.runPendingTasks();
    assertThat(events).containsExactly("late deadline at 1500");
  }

  @Test
  void aFreedSlotAdmitsTheQueuedRequestBeforeItsDeadline() {
    admit("first", clock.nanoTime());
    admit("second", clock.nanoTime());
    advance(300);
    admission.routed(); // the first request ended before it was routed: its slot is free again
    admission.released();
    channel.runPendingTasks();
    assertThat(events).containsExactly("second admitted at 300");
    advance(1000);
    assertThat(events).hasSize(1);
  }
}
