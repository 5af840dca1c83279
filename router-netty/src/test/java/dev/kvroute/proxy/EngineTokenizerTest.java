package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.Lease;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.CircuitBreakerConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.netty.handler.codec.http.HttpHeaders;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The engine tokenizer against a fake engine ({@link EngineTokenizer.Caller}): its answer, each kind
 * of fallback with its metric, which backend is asked, and that the caller is never waited on (the
 * answer comes through the executor, and a pending call leaves the caller's thread free).
 */
final class EngineTokenizerTest {
  private static final String CHAT = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

  /** A fake engine: records each call and answers with whatever the test puts in {@code next}. */
  private static final class FakeEngine implements EngineTokenizer.Caller {
    final List<String> asked = new ArrayList<>();
    final List<String> bodies = new ArrayList<>();
    CompletableFuture<ControlClient.Response> next;

    @Override
    public CompletableFuture<ControlClient.Response> post(Backend backend, HttpHeaders headers, byte[] body,
        Duration timeout) {
      asked.add(backend.id().name());
      bodies.add(new String(body, StandardCharsets.UTF_8));
      return next;
    }
  }

  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final LoadTracker loads = LoadTracker.create();
  private final AtomicLong now = new AtomicLong();
  private final FakeEngine engine = new FakeEngine();
  private final EngineTokenizer tokenizer = new EngineTokenizer(Set.of(), true, Set.of("local-model"),
      Duration.ofMillis(200), new EngineTokenCache(1 << 20, 0.25), engine, loads, registry, now::get);

  private static Backend backend(String name) {
    return new Backend(new BackendConfig(URI.create("http://127.0.0.1:1/"), name, 0),
        new CircuitBreaker(new CircuitBreakerConfig(true, 3, Duration.ofSeconds(10), 2), () -> 0, (x, y) -> {}), 1000);
  }

  private static CompletableFuture<ControlClient.Response> answer(int status, String body) {
    return CompletableFuture.completedFuture(new ControlClient.Response(status, "application/json",
        body.getBytes(StandardCharsets.UTF_8)));
  }

  private static EngineTokenRequest request(String body) throws Exception {
    return EngineTokenRequest.of(EngineTokenRequestTest.view(Endpoint.CHAT_COMPLETIONS, body), "m");
  }

  private int[][] ask(EngineTokenRequest r, List<Backend> candidates) {
    int[][] out = {{-1}};
    List<Runnable> queued = new ArrayList<>();
    tokenizer.tokens(r, candidates, null, queued::add, t -> out[0] = t, () -> { });
    queued.forEach(Runnable::run);
    return out;
  }

  private double fallbacks(String reason) {
    return registry.get("kvroute.tokenizer.fallbacks").tag("reason", reason).counter().count();
  }

  @Test
  void theEnginesTokensAreUsedAndTheSameRequestIsNotSentTwice() throws Exception {
    engine.next = answer(200, "{\"count\":3,\"max_model_len\":4096,\"tokens\":[7,8,9],\"token_strs\":null}");
    EngineTokenRequest r = request(CHAT);
    assertThat(ask(r, List.of(backend("a")))[0]).containsExactly(7, 8, 9);
    assertThat(ask(r, List.of(backend("a")))[0]).containsExactly(7, 8, 9);
    assertThat(engine.asked).hasSize(1);
    assertThat(engine.bodies.get(0)).contains("\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]");
    assertThat(registry.get("kvroute.tokenizer.engine.lookups").tag("result", "exact").counter().count()).isEqualTo(1);
    assertThat(registry.get("kvroute.tokenizer.engine.lookups").tag("result", "call").counter().count()).isEqualTo(1);
  }

  @Test
  void aTimeoutFallsBackAndIsCounted() throws Exception {
    engine.next = CompletableFuture.failedFuture(new TimeoutException("no answer"));
    assertThat(ask(request(CHAT), List.of(backend("a")))[0]).isNull();
    assertThat(fallbacks("timeout")).isEqualTo(1);
  }

  @Test
  void aRefusedConnectionFallsBackAsUnreachable() throws Exception {
    engine.next = CompletableFuture.failedFuture(new ConnectException("Connection refused"));
    assertThat(ask(request(CHAT), List.of(backend("a")))[0]).isNull();
    assertThat(fallbacks("unreachable")).isEqualTo(1);
  }

  @Test
  void anErrorOrAnAnswerWithoutTokensFallsBack() throws Exception {
    engine.next = answer(500, "{\"error\":{\"message\":\"boom\"}}");
    assertThat(ask(request(CHAT), List.of(backend("a")))[0]).isNull();
    engine.next = answer(200, "{\"count\":0,\"tokens\":[]}"); // "hi" has text: [] is not its tokens
    assertThat(ask(request(CHAT), List.of(backend("a")))[0]).isNull();
    engine.next = answer(200, "<html>");
    assertThat(ask(request(CHAT), List.of(backend("a")))[0]).isNull();
    assertThat(fallbacks("error")).isEqualTo(3);
  }

  @Test
  void anEmptyAnswerForAnEmptyPromptWasAnErrorAndIsAnAnswer() throws Exception {
    engine.next = answer(200, "{\"count\":0,\"max_model_len\":4096,\"tokens\":[],\"token_strs\":null}");
    EngineTokenRequest completion = EngineTokenRequest.of(
        EngineTokenRequestTest.view(Endpoint.COMPLETIONS, "{\"model\":\"m\",\"prompt\":\"\",\"add_special_tokens\":false}"), "m");
    assertThat(ask(completion, List.of(backend("a")))[0]).isEmpty();
    EngineTokenRequest chat = request("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\"},"
        + "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\"}]}]}");
    assertThat(ask(chat, List.of(backend("a")))[0]).isEmpty();
    assertThat(fallbacks("error")).isZero();
    assertThat(registry.get("kvroute.tokenizer.engine.call").timer().count()).isEqualTo(2);
    // cached as any answer: not asked again
    assertThat(ask(chat, List.of(backend("a")))[0]).isEmpty();
    assertThat(engine.asked).hasSize(2);
    // tools make text even around empty messages
    EngineTokenRequest tools = request("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\"}],"
        + "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]}");
    assertThat(ask(tools, List.of(backend("a")))[0]).isNull();
    assertThat(fallbacks("error")).isEqualTo(1);
  }

  @Test
  void anOverlongAnswerWasBelievedAndFallsBackCountedAndLoggedOncePerBackend() throws Exception {
    EngineTokenRequest r = request(CHAT);
    long bound = EngineTokenizer.maxTokens(r);
    assertThat(bound).isEqualTo(r.body().length + EngineTokenizer.TEMPLATE_TOKENS);
    engine.next = answer(200, tokens((int) bound));
    assertThat(ask(r, List.of(backend("a")))[0]).as("at the bound: believed").hasSize((int) bound);

    EngineTokenRequest other = request("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"ho\"}]}");
    engine.next = answer(200, tokens((int) EngineTokenizer.maxTokens(other) + 1));
    java.util.logging.Logger jul = java.util.logging.Logger.getLogger(EngineTokenizer.class.getName());
    List<String> logged = new ArrayList<>();
    java.util.logging.Handler h = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord rec) {
        logged.add(rec.getMessage());
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    jul.addHandler(h);
    try {
      for (String b : new String[] {"a", "a", "b", "a"}) {
        assertThat(ask(other, List.of(backend(b)))[0]).as(b).isNull();
      }
      now.addAndGet(java.util.concurrent.TimeUnit.MINUTES.toNanos(1));
      assertThat(ask(other, List.of(backend("a")))[0]).isNull();
    } finally {
      jul.removeHandler(h);
    }
    assertThat(fallbacks("overlong")).isEqualTo(5);
    assertThat(logged).hasSize(3).allSatisfy(m -> assertThat(m).contains("tokens for a").contains("overlong"));
    assertThat(logged.get(0)).startsWith("tokenizer engine: a/tokenize answered");
    assertThat(logged.get(1)).startsWith("tokenizer engine: b/tokenize answered");
    assertThat(engine.asked).hasSize(6); // an overlong answer is not cached
  }

  private static String tokens(int n) {
    StringBuilder sb = new StringBuilder("{\"count\":").append(n).append(",\"tokens\":[");
    for (int i = 0; i < n; i++) {
      sb.append(i == 0 ? "" : ",").append(i % 1000);
    }
    return sb.append("]}").toString();
  }

  @Test
  void anEngineWithoutChatTokenizeIsSkippedForAMinute() throws Exception {
    Backend sglang = backend("sglang");
    Backend vllm = backend("vllm");
    // SGLang's /tokenize takes a prompt, not messages
    engine.next = answer(400, "{\"object\":\"error\",\"message\":\"[{'type': 'missing', 'loc': ('body', 'prompt')}]\"}");
    loads.acquire(BackendId.of("vllm"), 0); // so the idle sglang is asked first
    assertThat(ask(request(CHAT), List.of(sglang, vllm))[0]).isNull();
    assertThat(fallbacks("unsupported")).isEqualTo(1);
    engine.next = answer(200, "{\"tokens\":[1,2]}");
    assertThat(ask(request(CHAT.replace("hi", "ho")), List.of(sglang, vllm))[0]).containsExactly(1, 2);
    assertThat(engine.asked).containsExactly("sglang", "vllm");
    assertThat(ask(request(CHAT.replace("hi", "hu")), List.of(sglang))[0]).isNull();
    assertThat(fallbacks("no_backend")).isEqualTo(1);
    now.addAndGet(Duration.ofMinutes(1).toNanos());
    assertThat(ask(request(CHAT.replace("hi", "he")), List.of(sglang))[0]).containsExactly(1, 2);
  }

  @Test
  void theLeastLoadedCandidateIsAsked() throws Exception {
    Lease l1 = loads.acquire(BackendId.of("a"), 0);
    loads.acquire(BackendId.of("a"), 0);
    loads.acquire(BackendId.of("b"), 0);
    engine.next = answer(200, "{\"tokens\":[1]}");
    ask(request(CHAT), List.of(backend("a"), backend("b"), backend("c")));
    ask(request(CHAT.replace("hi", "x")), List.of(backend("a"), backend("b")));
    assertThat(engine.asked).containsExactly("c", "b");
    l1.release();
  }

  @Test
  void noCandidateFallsBackAtOnce() throws Exception {
    assertThat(ask(request(CHAT), List.of())[0]).isNull();
    assertThat(fallbacks("no_backend")).isEqualTo(1);
    assertThat(engine.asked).isEmpty();
  }

  @Test
  void aPendingCallHoldsNoThreadAndItsAnswerComesThroughTheExecutor() throws Exception {
    engine.next = new CompletableFuture<>();
    List<Runnable> queued = new ArrayList<>();
    int[][] out = {{-1}};
    tokenizer.tokens(request(CHAT), List.of(backend("a")), null, queued::add, t -> out[0] = t, () -> { });
    assertThat(out[0]).containsExactly(-1); // returned without an answer
    engine.next.complete(new ControlClient.Response(200, "application/json", "{\"tokens\":[4]}".getBytes(StandardCharsets.UTF_8)));
    assertThat(out[0]).as("not before the executor runs it").containsExactly(-1);
    assertThat(queued).hasSize(1);
    queued.get(0).run();
    assertThat(out[0]).containsExactly(4);
  }

  @Test
  void anAnswerTheClosedLoopRefusesRunsTheAbandonedStepInstead() throws Exception {
    engine.next = new CompletableFuture<>();
    int[][] out = {{-1}};
    boolean[] abandoned = {false};
    tokenizer.tokens(request(CHAT), List.of(backend("a")), null,
        task -> {
          throw new java.util.concurrent.RejectedExecutionException("event loop shut down");
        },
        t -> out[0] = t, () -> abandoned[0] = true);
    engine.next.complete(new ControlClient.Response(200, "application/json", "{\"tokens\":[4]}".getBytes(StandardCharsets.UTF_8)));
    assertThat(abandoned[0]).as("the caller releases its request").isTrue();
    assertThat(out[0]).containsExactly(-1);
  }

  @Test
  void whichModelsAskTheEngine() {
    assertThat(tokenizer.applies("m")).isTrue();
    assertThat(tokenizer.applies(null)).isTrue();
    assertThat(tokenizer.applies("local-model")).isFalse();
    EngineTokenizer perModel = new EngineTokenizer(Set.of("e"), false, Set.of(), Duration.ofMillis(1),
        new EngineTokenCache(0, 0), engine, loads, new PrometheusMeterRegistry(PrometheusConfig.DEFAULT), now::get);
    assertThat(perModel.applies("e")).isTrue();
    assertThat(perModel.applies("m")).isFalse();
    assertThat(perModel.applies(null)).isFalse();
  }

  @Test
  void parseReadsVllmAndSglangAnswers() throws Exception {
    assertThat(EngineTokenizer.parse("{\"count\":2,\"max_model_len\":8,\"tokens\":[151644,0]}".getBytes(StandardCharsets.UTF_8)))
        .containsExactly(151644, 0);
    assertThat(EngineTokenizer.parse("{\"tokens\":[3],\"count\":1,\"max_model_len\":-1}".getBytes(StandardCharsets.UTF_8)))
        .containsExactly(3);
    assertThatThrownBy(() -> EngineTokenizer.parse("{\"tokens\":[-1]}".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IOException.class);
    assertThatThrownBy(() -> EngineTokenizer.parse("{\"tokens\":[[1,2]]}".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IOException.class);
    assertThatThrownBy(() -> EngineTokenizer.parse("{\"count\":1}".getBytes(StandardCharsets.UTF_8)))
        .isInstanceOf(IOException.class);
  }
}
