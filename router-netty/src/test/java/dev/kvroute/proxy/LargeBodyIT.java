package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A large body is parsed and tokenized off the event loop: while its tokenizing is held up, the
 * router's only event loop still answers other connections, and the request is then routed with the
 * tokens computed off the loop.
 */
@ExtendWith(NettyLeakExtension.class)
final class LargeBodyIT {
  static final CountDownLatch TOKENIZING = new CountDownLatch(1);
  static final CountDownLatch RELEASE = new CountDownLatch(1);

  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> BACKEND = new ServerExtension<>(() -> new FakeBackend("large"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> {
    ProxyConfig config = ProxyConfig.defaults().withPort(0).withAdminPort(-1).withEventLoopThreads(1)
        .withBackendUrls(List.of(BACKEND.get().uri()));
    return KvrouteServer.start(config, new HeldTokenizing(KvrouteServer.createCore(config)));
  });

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void largeBodyIsTokenizedOffTheEventLoopWhileOtherConnectionsAreServed() throws Exception {
    URI base = ROUTER.get().uri();
    String prompt = "large body ".repeat((ProxyHandler.OFFLOAD_BODY_BYTES / 11) + 1);
    CompletableFuture<HttpResponse<String>> large = http.sendAsync(HttpRequest.newBuilder(base.resolve("/v1/completions"))
        .POST(HttpRequest.BodyPublishers.ofString("{\"prompt\":\"" + prompt + "\",\"max_tokens\":1}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(TOKENIZING.await(10, TimeUnit.SECONDS)).as("tokenizing started").isTrue();

    // the single event loop is free while the large prompt's tokenizing is held up
    HttpResponse<String> health = http.send(HttpRequest.newBuilder(base.resolve("/health"))
        .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(large).isNotDone();

    RELEASE.countDown();
    HttpResponse<String> r = large.get(10, TimeUnit.SECONDS);
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(BACKEND.get().last().body().length).isGreaterThanOrEqualTo(ProxyHandler.OFFLOAD_BODY_BYTES);
    assertThat(ROUTER.get().core().index().sizeTokens(ROUTER.get().backends().get(0))).isPositive();
  }

  /** A routing core whose tokenizing of large prompts waits for {@link #RELEASE}, wherever it runs. */
  private static final class HeldTokenizing extends ForwardingRouterCore {
    HeldTokenizing(RouterCore core) {
      super(core);
    }

    private void hold(RequestView view) {
      if (view.segments().stream().anyMatch(s -> s.text() != null && s.text().length() >= ProxyHandler.OFFLOAD_BODY_BYTES / 2)) {
        TOKENIZING.countDown();
        try {
          RELEASE.await(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }

    @Override
    public Routed route(RequestView view, Collection<BackendId> healthy) {
      hold(view);
      return core.route(view, healthy);
    }

    @Override
    public Routed route(RequestView view, long namespace, Collection<BackendId> healthy) {
      hold(view);
      return core.route(view, namespace, healthy);
    }

    @Override
    public Decision explain(RequestView view, Collection<BackendId> healthy) {
      hold(view);
      return core.explain(view, healthy);
    }

    @Override
    public int[] tokens(RequestView view) {
      hold(view);
      return core.tokens(view);
    }
  }
}
