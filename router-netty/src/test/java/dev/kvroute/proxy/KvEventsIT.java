package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.engine.kvevents.BlockHashFormat;
import dev.kvroute.engine.kvevents.KvEventEncoder;
import dev.kvroute.engine.kvevents.KvEventLayout;
import dev.kvroute.engine.model.KvCacheEvent;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.HealthCheckConfig;
import dev.kvroute.proxy.config.IndexConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The router subscribed to engines' KV events over real ZeroMQ sockets (vLLM's wire format, both
 * layouts): its precise view follows what they publish, recovers a lost batch through the replay
 * socket or by clearing, clears on AllBlocksCleared and on a publisher restart, and two routers fed
 * by the same engines decide alike.
 */
final class KvEventsIT {
  private static final int PAGE = 16;
  private final AtomicLong hashes = new AtomicLong(1L << 62);

  private static KvrouteServer router(String mode, List<BackendConfig> backends) {
    IndexConfig index = IndexConfig.defaults().withMode(mode);
    return KvrouteServer.start(ProxyConfig.defaults().withPort(0).withAdminPort(-1).withPolicy("cache-aware")
        .withHealthCheck(new HealthCheckConfig(false, "/health", Duration.ofSeconds(5), Duration.ofSeconds(1), 1, 1, Duration.ZERO))
        .withIndex(index)
        .withBackends(backends));
  }

  private static BackendConfig backend(int i, ZmqKvPublisher pub, boolean replay) {
    return new BackendConfig(URI.create("http://127.0.0.1:" + (40_000 + i)), "e" + i, 1 << 20, List.of(),
        pub == null ? null : pub.endpoint(), pub == null || !replay ? null : pub.replayEndpoint());
  }

  private static int[] prompt(int seed, int tokens) {
    int[] t = new int[tokens];
    for (int i = 0; i < t.length; i++) {
      t[i] = seed * 100_000 + i;
    }
    return t;
  }

  /** A BlockStored of {@code tokens}' whole blocks from block {@code from}, under {@code parent}. */
  private List<KvCacheEvent> stored(int[] tokens, int from, Long parent, List<Long> names) {
    int n = tokens.length / PAGE - from;
    long[] h = new long[n];
    for (int i = 0; i < n; i++) {
      h[i] = hashes.incrementAndGet() * 0x9E3779B97F4A7C15L; // engine keys, many above 2^63
      names.add(h[i]);
    }
    return List.of(new KvCacheEvent.BlockStored(h, parent, Arrays.copyOfRange(tokens, from * PAGE, (from + n) * PAGE),
        PAGE, null, null));
  }

  private static List<KvCacheEvent> batch(KvCacheEvent... events) {
    return List.of(events);
  }

  private static int matched(KvrouteServer router, BackendId id, int[] tokens) {
    return router.core().index().match(tokens).matched(id);
  }

  /**
   * Publishes {@code batch} until the router's view satisfies {@code condition}: the subscription may
   * not have joined yet (ZeroMQ's slow joiner), and a stored block announced again changes nothing.
   */
  private static void publishUntil(ZmqKvPublisher pub, List<KvCacheEvent> batch, java.util.concurrent.Callable<Boolean> condition) {
    publishUntil(null, pub, batch, condition);
  }

  /**
   * As above; on a timeout the failure says what {@code router} (if given) received and what the
   * subscriber threads were doing (this wait has timed out rarely, with nothing logged).
   */
  private static void publishUntil(KvrouteServer router, ZmqKvPublisher pub, List<KvCacheEvent> batch,
      java.util.concurrent.Callable<Boolean> condition) {
    pub.publish(batch);
    try {
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100)).until(() -> {
        if (condition.call()) {
          return true;
        }
        pub.publish(batch);
        return false;
      });
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw explained("no batch applied within 30 s", router, pub, e);
    }
  }

  /** Waits up to {@code seconds} for {@code condition}; on a timeout, fails as {@link #explained} says. */
  private static void awaitExplained(int seconds, KvrouteServer router, ZmqKvPublisher pub,
      java.util.concurrent.Callable<Boolean> condition) {
    try {
      await().atMost(Duration.ofSeconds(seconds)).until(condition);
    } catch (org.awaitility.core.ConditionTimeoutException e) {
      throw explained("not within " + seconds + " s", router, pub, e);
    }
  }

  /**
   * A failure that says what {@code router} (if given) received, what replays {@code pub} was asked
   * for, and what the subscriber and replay threads were doing: these waits have timed out rarely
   * in CI with nothing else to go on.
   */
  private static AssertionError explained(String what, KvrouteServer router, ZmqKvPublisher pub, Throwable cause) {
    StringBuilder why = new StringBuilder(what + "; publisher at " + pub.endpoint() + ", replay requests "
        + pub.replayRequests);
    if (router != null) {
      router.scrapeMetrics().lines().filter(l -> l.startsWith("kvroute_kv_events") || l.startsWith("kvroute_index"))
          .forEach(l -> why.append('\n').append(l));
    }
    Thread.getAllStackTraces().forEach((t, stack) -> {
      if (t.getName().startsWith("kvroute-kv-events") || t.getName().startsWith("test-kv-replay")) {
        why.append('\n').append(t.getName()).append(' ').append(t.getState());
        for (StackTraceElement f : stack) {
          why.append("\n  at ").append(f);
        }
      }
    });
    return new AssertionError(why.toString(), cause);
  }

  @Test
  void thePreciseViewFollowsTheEngineAndReplaysALostBatch() throws Exception {
    try (ZmqKvPublisher pub = new ZmqKvPublisher("kv@e0@m", KvEventLayout.CURRENT, BlockHashFormat.INT);
        KvrouteServer router = router("precise", List.of(backend(0, pub, true)))) {
      BackendId e0 = BackendId.of("e0");
      List<Long> names = new ArrayList<>();
      int[] p = prompt(1, 64);
      publishUntil(router, pub, stored(Arrays.copyOf(p, 32), 0, null, names), () -> matched(router, e0, p) == 32);
      assertThat(((KvEventIndex) router.core().index()).mode(e0)).isEqualTo(KvEventIndex.Mode.PRECISE);

      pub.skip(stored(p, 2, names.get(1), names)); // lost on the live stream
      pub.publish(batch(new KvCacheEvent.BlockRemoved(new long[] {names.get(0) + 1}))); // an unknown block: no effect
      try {
        await().atMost(Duration.ofSeconds(20)).until(() -> matched(router, e0, p) == 64);
      } catch (org.awaitility.core.ConditionTimeoutException e) {
        throw new AssertionError("the replayed batch was not applied; replay requests " + pub.replayRequests
            + ", matched " + matched(router, e0, p) + "\n" + router.scrapeMetrics().lines()
                .filter(l -> l.startsWith("kvroute_kv_events") || l.startsWith("kvroute_index")).toList(), e);
      }
      assertThat(pub.replayRequests).isNotEmpty();
      String metrics = router.scrapeMetrics();
      assertThat(metrics).contains("kvroute_kv_events_gaps_total{backend=\"e0\"} 1.0");
      assertThat(metrics).contains("kvroute_kv_events_missed_total{backend=\"e0\"} 0.0");
      assertThat(metrics).contains("kvroute_index_precise{backend=\"e0\"} 1.0");
      assertThat(metrics).contains("kvroute_kv_events_total{backend=\"e0\",result=\"applied\"}");

      pub.publish(batch(new KvCacheEvent.BlockRemoved(new long[] {names.get(3)})));
      await().atMost(Duration.ofSeconds(10)).until(() -> matched(router, e0, p) == 48);
      pub.publish(batch(new KvCacheEvent.AllBlocksCleared()));
      await().atMost(Duration.ofSeconds(10)).until(() -> matched(router, e0, p) == 0);
    }
  }

  @Test
  void aReplayRequestLeftUnansweredIsAskedAgain() throws Exception {
    try (ZmqKvPublisher pub = new ZmqKvPublisher("", KvEventLayout.CURRENT, BlockHashFormat.INT);
        KvrouteServer router = router("precise", List.of(backend(0, pub, true)))) {
      BackendId e0 = BackendId.of("e0");
      List<Long> names = new ArrayList<>();
      int[] p = prompt(2, 48);
      publishUntil(router, pub, stored(Arrays.copyOf(p, 16), 0, null, names), () -> matched(router, e0, p) == 16);
      pub.ignoreReplays(1);
      pub.skip(stored(p, 1, names.get(0), names));
      pub.publish(batch(new KvCacheEvent.BlockRemoved(new long[] {names.get(0) + 1})));
      awaitExplained(20, router, pub, () -> matched(router, e0, p) == 48);
      assertThat(pub.replayRequests).hasSizeGreaterThanOrEqualTo(2);
      assertThat(router.scrapeMetrics()).contains("kvroute_kv_events_replay_failures_total{backend=\"e0\"} 0.0");
    }
  }

  @Test
  void aLostBatchWithoutReplayClearsAndAPublisherRestartClears() throws Exception {
    ZmqKvPublisher pub = new ZmqKvPublisher("", KvEventLayout.LEGACY, BlockHashFormat.BYTES);
    // long-running: the restarted publisher's numbers from 0 stay below the last one applied (a restart
    // numbered exactly last + 1 would pass for the next batch; the engine's start time catches that case)
    pub.numberFrom(1_000_000);
    BackendConfig cfg = backend(0, pub, false);
    try (KvrouteServer router = router("hybrid", List.of(cfg, backend(1, null, false)))) {
      BackendId e0 = BackendId.of("e0");
      KvEventIndex index = (KvEventIndex) router.core().index();
      assertThat(index.mode(BackendId.of("e1"))).isEqualTo(KvEventIndex.Mode.APPROXIMATE);
      List<Long> names = new ArrayList<>();
      int[] p = prompt(1, 64);
      int[] q = prompt(2, 32);
      publishUntil(pub, stored(p, 0, null, names), () -> matched(router, e0, p) == 64);
      pub.skip(batch(new KvCacheEvent.BlockRemoved(new long[] {names.get(3)})));
      pub.publish(stored(q, 0, null, names));
      await().atMost(Duration.ofSeconds(10)).until(() -> matched(router, e0, q) == 32);
      assertThat(matched(router, e0, p)).as("cleared: no credit for what the lost batch may have removed").isZero();
      assertThat(router.scrapeMetrics()).contains("kvroute_kv_events_missed_total{backend=\"e0\"} 1.0");

      pub.close(); // the engine restarts: a new publisher numbering from 0 on the same port
      int port = cfg.kvEvents().getPort();
      try (RestartedPublisher again = new RestartedPublisher(port)) {
        int[] r = prompt(3, 32);
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).until(() -> {
          again.publish(stored(r, 0, null, names));
          return matched(router, e0, r) == 32;
        });
        assertThat(matched(router, e0, q)).as("the restart cleared the old view").isZero();
        assertThat(router.scrapeMetrics()).contains("kvroute_kv_events_restarts_total{backend=\"e0\"} 1.0");
      }
    }
  }

  /** A PUB socket on a fixed port, numbering from 0 again (an engine's new process). */
  private static final class RestartedPublisher implements AutoCloseable {
    final org.zeromq.ZContext context = new org.zeromq.ZContext(1);
    final org.zeromq.ZMQ.Socket pub = context.createSocket(org.zeromq.SocketType.PUB);
    long next;

    RestartedPublisher(int port) {
      pub.setLinger(0);
      await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
          .until(() -> pub.bind("tcp://127.0.0.1:" + port));
    }

    final KvEventEncoder encoder = new KvEventEncoder(KvEventLayout.LEGACY, BlockHashFormat.INT);

    void publish(List<KvCacheEvent> batch) {
      pub.sendMore(new byte[0]);
      pub.sendMore(java.nio.ByteBuffer.allocate(8).putLong(next++).array());
      pub.send(encoder.encode(System.currentTimeMillis() / 1e3, batch, 0));
    }

    @Override
    public void close() {
      context.close();
    }
  }

  @Test
  void twoRoutersFedByTheSameEnginesMakeTheSameDecision() throws Exception {
    List<ZmqKvPublisher> pubs = new ArrayList<>();
    try {
      List<BackendConfig> backends = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        ZmqKvPublisher pub = new ZmqKvPublisher("", KvEventLayout.CURRENT, BlockHashFormat.INT);
        pubs.add(pub);
        backends.add(backend(i, pub, true));
      }
      try (KvrouteServer a = router("precise", backends); KvrouteServer b = router("precise", backends)) {
        // engine i holds sessions i and i+4 at different depths
        List<int[]> probes = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
          List<Long> names = new ArrayList<>();
          int[] s1 = prompt(i, 64 + 16 * i);
          int[] s2 = prompt(i + 4, 32);
          probes.add(s1);
          probes.add(s2);
          BackendId id = BackendId.of("e" + i);
          ZmqKvPublisher pub = pubs.get(i);
          publishUntil(pub, stored(s1, 0, null, names),
              () -> matched(a, id, s1) == s1.length && matched(b, id, s1) == s1.length);
          publishUntil(pub, stored(s2, 0, null, names),
              () -> matched(a, id, s2) == 32 && matched(b, id, s2) == 32);
        }
        List<BackendId> all = a.backends();
        for (int[] probe : probes) {
          int[] next = Arrays.copyOf(probe, probe.length + 40); // the session's next turn
          Decision da = a.core().explain(next, null, all);
          Decision db = b.core().explain(next, null, all);
          assertThat(da.backend()).isEqualTo(db.backend());
          assertThat(da.candidates()).isEqualTo(db.candidates());
          assertThat(da.matchedTokens()).isEqualTo(probe.length);
        }
      }
    } finally {
      for (ZmqKvPublisher p : pubs) {
        p.close();
      }
    }
  }
}
