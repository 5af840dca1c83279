package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.proxy.config.ProxyConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A chat prompt with much new text (a new conversation's first turn) is routed, tokenizing
 * included, off the event loop: while its routing is held up, the router's only event loop still
 * answers other connections; the conversation's next turn, whose leading messages the tokenizer
 * kept, is routed on the loop.
 */
@ExtendWith(NettyLeakExtension.class)
final class ColdPromptIT {
  static final CountDownLatch ROUTING = new CountDownLatch(1);
  static final CountDownLatch RELEASE = new CountDownLatch(1);
  /** The thread of each {@code route(view, namespace, healthy)}, in order. */
  static final List<String> THREADS = new CopyOnWriteArrayList<>();

  @RegisterExtension
  @Order(1)
  static final ServerExtension<FakeBackend> BACKEND = new ServerExtension<>(() -> new FakeBackend("cold"));

  @RegisterExtension
  @Order(2)
  static final ServerExtension<KvrouteServer> ROUTER = new ServerExtension<>(() -> {
    ProxyConfig config = ProxyConfig.defaults().withPort(0).withAdminPort(-1).withEventLoopThreads(1)
        .withPolicy("cache-aware").withBackendUrls(List.of(BACKEND.get().uri()));
    return KvrouteServer.start(config, new BodyWorkerHold(KvrouteServer.createCore(config), THREADS, () -> {
      if (ROUTING.getCount() == 0) {
        return false; // the first routing on a body worker is held, no other
      }
      ROUTING.countDown();
      return true;
    }, RELEASE));
  });

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @Test
  void aNewConversationIsRoutedOffTheLoopAndItsNextTurnOnIt() throws Exception {
    URI base = ROUTER.get().uri();
    String system = "You are a careful assistant. " + "cold prompt text ".repeat(ProxyHandler.COLD_TEXT_CODE_POINTS / 8);
    String first = "{\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "\"},"
        + "{\"role\":\"user\",\"content\":\"hello\"}],\"max_tokens\":1}";
    CompletableFuture<HttpResponse<String>> cold = http.sendAsync(chat(base, first), HttpResponse.BodyHandlers.ofString());
    assertThat(ROUTING.await(10, TimeUnit.SECONDS)).as("routing started off the loop").isTrue();

    // the single event loop is free while the new conversation's routing is held up
    HttpResponse<String> health = http.send(HttpRequest.newBuilder(base.resolve("/health"))
        .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(health.statusCode()).isEqualTo(200);
    assertThat(cold).isNotDone();

    RELEASE.countDown();
    assertThat(cold.get(10, TimeUnit.SECONDS).statusCode()).isEqualTo(200);
    assertThat(ROUTER.get().core().index().sizeTokens(ROUTER.get().backends().get(0))).isPositive();

    // the next turn: the first turn's messages, the reply and a new question
    String next = "{\"messages\":[{\"role\":\"system\",\"content\":\"" + system + "\"},"
        + "{\"role\":\"user\",\"content\":\"hello\"},{\"role\":\"assistant\",\"content\":\"hi\"},"
        + "{\"role\":\"user\",\"content\":\"and then?\"}],\"max_tokens\":1}";
    assertThat(http.send(chat(base, next), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    assertThat(THREADS).hasSize(2);
    assertThat(THREADS.get(0)).startsWith("kvroute-body");
    assertThat(THREADS.get(1)).doesNotStartWith("kvroute-body");
  }

  /** A chat completion request of {@code body} to the router at {@code base}, 10 s to answer. */
  static HttpRequest chat(URI base, String body) {
    return HttpRequest.newBuilder(base.resolve("/v1/chat/completions")).timeout(Duration.ofSeconds(10))
        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build();
  }
}
