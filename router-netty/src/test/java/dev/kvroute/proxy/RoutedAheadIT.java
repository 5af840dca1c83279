package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A new conversation that arrives while every body worker is encoding others' is routed on what the
 * router knows of it (nothing: it is new) on the event loop and forwarded at once; its prompt is
 * encoded and recorded in the chosen backend's index view once a worker is free, and its next turn
 * finds it there.
 */
@ExtendWith(NettyLeakExtension.class)
final class RoutedAheadIT {
  /** One body worker per processor, as {@code KvrouteServer} starts them. */
  static final int WORKERS = Math.max(1, Runtime.getRuntime().availableProcessors());
  /** Routings in progress on body workers, each held until {@link #RELEASE}. */
  static final AtomicInteger HELD = new AtomicInteger();
  static final CountDownLatch RELEASE = new CountDownLatch(1);
  static final List<RouterCore.RoutedAhead> AHEAD = new CopyOnWriteArrayList<>();
  static final List<String> AHEAD_THREADS = new CopyOnWriteArrayList<>();
  static final List<String> ROUTE_THREADS = new CopyOnWriteArrayList<>();

  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> BACKEND = new ServerExtension<>(() -> new FakeBackend("ahead"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> {
    ProxyConfig config = ProxyConfig.defaults().withPort(0).withAdminPort(-1).withEventLoopThreads(1)
        .withPolicy("cache-aware")
        // room for every prompt of the test in the backend's view
        .withBackends(List.of(new BackendConfig(BACKEND.get().uri(), "ahead", 1 << 20)));
    return KvrouteServer.start(config, new HeldWorkers(KvrouteServer.createCore(config)));
  });

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void aNewConversationWhileTheWorkersAreBusyIsForwardedAtOnceAndRecordedLater() throws Exception {
    URI base = ROUTER.get().uri();
    List<CompletableFuture<HttpResponse<String>>> held = new ArrayList<>();
    for (int i = 0; i < WORKERS; i++) {
      // one at a time: each finds a worker free (a task queued for a moment would count as busy)
      held.add(http.sendAsync(ColdPromptIT.chat(base, firstTurn("held " + i)), HttpResponse.BodyHandlers.ofString()));
      int started = i + 1;
      Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> HELD.get() == started);
    }
    assertThat(AHEAD).as("each held conversation found a worker free").isEmpty();

    String system = system("ahead");
    HttpResponse<String> ahead = http.send(ColdPromptIT.chat(base, firstTurn("ahead")), HttpResponse.BodyHandlers.ofString());
    assertThat(ahead.statusCode()).isEqualTo(200);
    assertThat(held).noneMatch(CompletableFuture::isDone);
    assertThat(AHEAD).hasSize(1);
    assertThat(AHEAD_THREADS.get(0)).doesNotStartWith("kvroute-body");
    assertThat(AHEAD.get(0).decision().matchedTokens()).isZero();
    assertThat(ROUTER.get().scrapeMetrics())
        .contains("kvroute_routing_ahead_of_encoding_total{policy=\"cache-aware\"} 1.0");

    RELEASE.countDown();
    for (CompletableFuture<HttpResponse<String>> f : held) {
      assertThat(f.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    }
    // recorded once a worker was free: the whole prompt is in the backend's view, not only what was known
    BackendId backend = ROUTER.get().backends().get(0);
    PrefixIndex index = ROUTER.get().core().index();
    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> AHEAD.get(0).promptTokens().length > 0);
    int[] tokens = AHEAD.get(0).promptTokens();
    int pages = tokens.length / index.pageSizeTokens();
    assertThat(pages).isGreaterThan(10);
    Awaitility.await().atMost(Duration.ofSeconds(10))
        .until(() -> index.match(index.prompt(tokens)).matched(backend) >= pages * index.pageSizeTokens());

    // its next turn: its messages were kept, so it is no longer new text, and it is routed on the loop
    int routedBefore = ROUTE_THREADS.size();
    String next = "{\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "\"},"
        + "{\"role\":\"user\",\"content\":\"hello\"},{\"role\":\"assistant\",\"content\":\"hi\"},"
        + "{\"role\":\"user\",\"content\":\"and then?\"}],\"max_tokens\":1}";
    assertThat(http.send(ColdPromptIT.chat(base, next), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    assertThat(AHEAD).hasSize(1);
    assertThat(ROUTE_THREADS).hasSize(routedBefore + 1);
    assertThat(ROUTE_THREADS.get(routedBefore)).doesNotStartWith("kvroute-body");
  }

  private static String system(String name) {
    return "You are assistant " + name + ". " + (name + " new text ").repeat(ProxyHandler.COLD_TEXT_CODE_POINTS / 8);
  }

  private static String firstTurn(String name) {
    return "{\"messages\":[{\"role\":\"system\",\"content\":\"" + system(name) + "\"},"
        + "{\"role\":\"user\",\"content\":\"hello\"}],\"max_tokens\":1}";
  }

  /**
   * A routing core whose routing of a view on a body worker waits for {@link #RELEASE}, and which
   * keeps what it routed ahead of encoding and the threads it routed on.
   */
  /** Every body worker's routing held; routings ahead recorded. */
  private static final class HeldWorkers extends BodyWorkerHold {
    HeldWorkers(RouterCore core) {
      super(core, ROUTE_THREADS, () -> {
        HELD.incrementAndGet();
        return true;
      }, RELEASE);
    }

    @Override
    public RoutedAhead routeAhead(RequestView view, long namespace, Collection<BackendId> healthy) {
      RoutedAhead r = core.routeAhead(view, namespace, healthy);
      AHEAD_THREADS.add(Thread.currentThread().getName());
      AHEAD.add(r);
      return r;
    }
  }
}
