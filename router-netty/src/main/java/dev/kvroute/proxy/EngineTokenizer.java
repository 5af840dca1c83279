package dev.kvroute.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.request.RequestView;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.netty.handler.codec.http.HttpHeaders;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * {@code --tokenizer engine}: the prompt tokens of a request as the engine computes them, from its
 * {@code POST /tokenize} (vLLM: chat {@code messages} rendered with the model's chat template, or a
 * completion {@code prompt}; SGLang: a completion {@code prompt} or {@code /generate} {@code text},
 * since its {@code /tokenize} takes no messages). The request sent is {@link EngineTokenRequest}'s;
 * answers are cached by {@link EngineTokenCache} (a request seen before, or the next turn of a
 * conversation, needs no call).
 *
 * <p><b>Which engine.</b> One of the routable backends serving the request's model (they serve the same
 * model, so they share its tokenizer and template): the one with the fewest requests in flight from this
 * router, ties taken in turn, skipping for a minute a backend that showed it cannot tokenize chat
 * messages (an SGLang engine: 404 or 405 for the path, or a 4xx that asks for {@code prompt}).
 *
 * <p><b>Fallback.</b> When no backend can be asked, the call is not answered within {@code timeout},
 * the connection fails, or the answer is an error, not a token list, an empty list for a prompt with
 * text, or longer than any tokenizer makes of the prompt ({@link #maxTokens}), the request is routed
 * on the router's own {@code o200k_base} tokens, as without this option: the request is never held
 * longer than {@code timeout} and never fails because of its tokens. An empty list for a prompt
 * without text (a completion {@code prompt} of {@code ""}, chat messages whose contents are all empty,
 * rendered by a template that adds nothing) is an answer. Each fallback counts in {@code
 * kvroute_tokenizer_fallbacks_total{reason}} ({@code timeout}, {@code unreachable}, {@code error},
 * {@code unsupported}, {@code no_backend}, {@code overlong}); the first of each reason in a minute is
 * logged in one line, and for {@code overlong} the first in a minute of each backend. Nothing waits
 * on an event loop: the call is Netty's ({@link ControlClient}) and its answer
 * comes back to {@code then} on the caller's executor.
 *
 * <p>Metrics: {@code kvroute_tokenizer_engine_lookups_total{result=exact|prefix|call}}, {@code
 * kvroute_tokenizer_engine_call_seconds} (answered calls) and {@code
 * kvroute_tokenizer_engine_reuse_corrections_total} (see {@link EngineTokenCache}).
 *
 * <p>Thread-safe.
 */
final class EngineTokenizer {
  private static final System.Logger LOG = System.getLogger(EngineTokenizer.class.getName());
  private static final JsonFactory JSON = new JsonFactory();
  private static final ObjectMapper TREE = new ObjectMapper();
  private static final long LOG_EVERY_NANOS = TimeUnit.MINUTES.toNanos(1);
  private static final long UNSUPPORTED_NANOS = TimeUnit.MINUTES.toNanos(1);
  private static final String PATH = "/tokenize";
  /**
   * Tokens a chat template may add beyond one token per byte of the {@code /tokenize} body: role
   * markers, a default system prompt (Llama 3.1's dates, Qwen 2.5's identity line) and tool-use
   * instructions, a few hundred tokens in the templates we know.
   */
  static final int TEMPLATE_TOKENS = 1024;

  /** Why a request was routed on the router's own tokens. */
  enum Reason {
    TIMEOUT, UNREACHABLE, ERROR, UNSUPPORTED, NO_BACKEND, OVERLONG;

    String tag() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /** Where the answer goes: the engine's tokens (or cached ones), or {@code null} to fall back. */
  interface Then {
    void tokens(int[] tokens);
  }

  private final Set<String> models;
  private final boolean forOtherModels;
  private final Set<String> notEngine;
  private final Duration timeout;
  private final EngineTokenCache cache;
  private final Caller caller;
  private final LoadTracker loads;
  private final Ticker ticker;
  private final Map<Reason, Counter> fallbacks = new EnumMap<>(Reason.class);
  private final AtomicLongArray lastLogged = new AtomicLongArray(Reason.values().length);
  private final Map<BackendId, Long> overlongLogged = new ConcurrentHashMap<>();
  private final Counter exactHits;
  private final Counter prefixHits;
  private final Counter calls;
  private final Timer callTime;
  private final Map<BackendId, Long> noChatUntil = new ConcurrentHashMap<>();
  private final AtomicInteger turn = new AtomicInteger();

  /** Sends one {@code POST /tokenize}; {@link ControlClient#postJson} in production, a fake in tests. */
  interface Caller {
    java.util.concurrent.CompletableFuture<ControlClient.Response> post(Backend backend, HttpHeaders headers,
        byte[] body, Duration timeout);
  }

  /**
   * @param models models tokenized by the engine by name ({@code routing.tokenizers} entries)
   * @param forOtherModels whether every other model (and a request without one) is too
   *     ({@code routing.tokenizer: engine})
   * @param notEngine models with a tokenizer of their own that is not the engine's
   * @param timeout the deadline of one call
   * @param cache the answers seen
   */
  EngineTokenizer(Set<String> models, boolean forOtherModels, Set<String> notEngine, Duration timeout,
      EngineTokenCache cache, Caller caller, LoadTracker loads, MeterRegistry registry, Ticker ticker) {
    this.models = Set.copyOf(models);
    this.forOtherModels = forOtherModels;
    this.notEngine = Set.copyOf(notEngine);
    this.timeout = timeout;
    this.cache = cache;
    this.caller = caller;
    this.loads = loads;
    this.ticker = ticker;
    for (Reason r : Reason.values()) {
      fallbacks.put(r, Counter.builder("kvroute.tokenizer.fallbacks").tag("reason", r.tag())
          .description("requests routed on the router's own o200k_base tokens because the engine's /tokenize "
              + "did not answer in time, failed, or could not be asked")
          .register(registry));
      lastLogged.set(r.ordinal(), Long.MIN_VALUE);
    }
    String lookups = "kvroute.tokenizer.engine.lookups";
    String what = "engine-tokenized requests by how their tokens were found";
    exactHits = Counter.builder(lookups).tag("result", "exact").description(what).register(registry);
    prefixHits = Counter.builder(lookups).tag("result", "prefix").description(what).register(registry);
    calls = Counter.builder(lookups).tag("result", "call").description(what).register(registry);
    callTime = Timer.builder("kvroute.tokenizer.engine.call").description("answered /tokenize calls")
        .register(registry);
    FunctionCounter.builder("kvroute.tokenizer.engine.reuse.corrections", cache, EngineTokenCache::corrections)
        .description("answers that showed a reused prefix could have ended in tokens the engine renders otherwise")
        .register(registry);
  }

  /** The production caller: {@code POST /tokenize} through {@code client}. */
  static Caller caller(ControlClient client) {
    return (backend, headers, body, timeout) -> client.postJson(backend.config(), PATH, headers, body, timeout);
  }

  /** Whether requests for {@code model} (the request's {@code model} field, or null) are engine-tokenized. */
  boolean applies(String model) {
    if (model == null) {
      return forOtherModels;
    }
    return models.contains(model) || (forOtherModels && !notEngine.contains(model));
  }

  /** The cache (for tests and metrics). */
  EngineTokenCache cache() {
    return cache;
  }

  /**
   * Finds the tokens of {@code request}: from the cache at once, else from a backend among {@code
   * candidates}; {@code then} runs on {@code executor} (at once, on the calling thread, for a cache
   * hit or an immediate fallback).
   *
   * @param headers the client's headers to pass on ({@code Authorization}), or {@code null}
   * @param abandoned runs instead of {@code then}, on the thread the engine's answer came on, when
   *     {@code executor} refuses {@code then} (the client's event loop has shut down, the router
   *     closing while the engine tokenized): the caller releases there what {@code then} would have
   *     used (the request)
   */
  void tokens(EngineTokenRequest request, List<Backend> candidates, HttpHeaders headers,
      Executor executor, Then then, Runnable abandoned) {
    EngineTokenCache.Lookup found = cache.lookup(request);
    if (found.kind() == EngineTokenCache.Kind.EXACT) {
      exactHits.increment();
      then.tokens(found.tokens());
      return;
    }
    if (found.kind() == EngineTokenCache.Kind.PREFIX) {
      prefixHits.increment();
      then.tokens(found.tokens());
      return;
    }
    Backend backend = choose(candidates, request.chat());
    if (backend == null) {
      fallBack(Reason.NO_BACKEND, candidates.isEmpty() ? "no routable backend serves the model"
          : "no backend serving the model can tokenize chat messages", then);
      return;
    }
    calls.increment();
    long t0 = ticker.nanos();
    caller.post(backend, headers, request.body(), timeout).whenComplete((response, failure) -> {
      int[] tokens = null;
      Reason reason = null;
      String detail = null;
      if (failure != null) {
        Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
        reason = cause instanceof TimeoutException ? Reason.TIMEOUT : Reason.UNREACHABLE;
        detail = reason == Reason.TIMEOUT
            ? backend.id().name() + " did not answer " + PATH + " within "
                + dev.kvroute.proxy.config.Durations.format(timeout)
            : backend.id().name() + PATH + " failed: " + cause;
      } else if (!response.ok()) {
        String body = new String(response.body(), 0, Math.min(300, response.body().length), StandardCharsets.UTF_8);
        if (request.chat() && (response.status() == 404 || response.status() == 405
            || (response.status() / 100 == 4 && body.contains("prompt")))) {
          noChatUntil.put(backend.id(), ticker.nanos() + UNSUPPORTED_NANOS);
          reason = Reason.UNSUPPORTED;
        } else {
          reason = Reason.ERROR;
        }
        detail = backend.id().name() + PATH + " answered " + response.status() + ": " + body.strip();
      } else {
        try {
          int[] answer = parse(response.body());
          if (answer.length == 0 && !withoutText(request)) {
            reason = Reason.ERROR;
            detail = backend.id().name() + PATH + " answered no tokens for a prompt with text";
          } else if (answer.length > maxTokens(request)) {
            reason = Reason.OVERLONG;
            detail = backend.id().name() + PATH + " answered " + answer.length + " tokens for a "
                + request.body().length + "-byte request, more than " + maxTokens(request)
                + " (one per byte plus " + TEMPLATE_TOKENS + " for the template)";
          } else {
            tokens = answer;
            callTime.record(ticker.nanos() - t0, TimeUnit.NANOSECONDS);
            cache.store(request, tokens, found);
          }
        } catch (IOException | RuntimeException e) {
          reason = Reason.ERROR;
          detail = backend.id().name() + PATH + " answered no token list: " + e.getMessage();
        }
      }
      int[] result = tokens;
      Reason why = reason;
      String said = detail;
      try {
        executor.execute(() -> {
          if (why == Reason.OVERLONG) {
            fallBack(why, said, firstInAMinute(backend.id()), then);
          } else if (why != null) {
            fallBack(why, said, then);
          } else {
            then.tokens(result);
          }
        });
      } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
        abandoned.run(); // the client's event loop is gone: so is its connection
      }
    });
  }

  /** The backend to ask: fewest in flight, ties in turn, none that cannot tokenize chat for chat. */
  private Backend choose(List<Backend> candidates, boolean chat) {
    int n = candidates.size();
    if (n == 0) {
      return null;
    }
    long now = ticker.nanos();
    int start = Math.floorMod(turn.getAndIncrement(), n);
    Backend best = null;
    int bestLoad = Integer.MAX_VALUE;
    for (int k = 0; k < n; k++) {
      Backend b = candidates.get((start + k) % n);
      if (chat) {
        Long until = noChatUntil.get(b.id());
        if (until != null) {
          if (now - until < 0) {
            continue;
          }
          noChatUntil.remove(b.id(), until);
        }
      }
      int load = loads.load(b.id()).inFlightRequests();
      if (load < bestLoad) {
        best = b;
        bestLoad = load;
      }
    }
    return best;
  }

  private void fallBack(Reason reason, String detail, Then then) {
    long now = ticker.nanos();
    long last = lastLogged.get(reason.ordinal());
    boolean log = (last == Long.MIN_VALUE || now - last >= LOG_EVERY_NANOS)
        && lastLogged.compareAndSet(reason.ordinal(), last, now);
    fallBack(reason, detail, log, then);
  }

  /** Whether this is {@code backend}'s first overlong answer in a minute (so it is logged). */
  private boolean firstInAMinute(BackendId backend) {
    long now = ticker.nanos();
    boolean[] first = {false};
    overlongLogged.compute(backend, (b, last) -> {
      first[0] = last == null || now - last >= LOG_EVERY_NANOS;
      return first[0] ? now : last;
    });
    return first[0];
  }

  private void fallBack(Reason reason, String detail, boolean log, Then then) {
    fallbacks.get(reason).increment();
    if (log) {
      LOG.log(Level.WARNING, "tokenizer engine: " + detail + "; routing on o200k_base tokens instead "
          + "(kvroute_tokenizer_fallbacks_total{reason=\"" + reason.tag() + "\"}; more within a minute are only counted)");
    }
    then.tokens(null);
  }

  /**
   * The {@code tokens} of a {@code /tokenize} answer (vLLM's and SGLang's {@code TokenizeResponse}:
   * {@code {"count": n, "max_model_len": m, "tokens": [ids...]}}).
   *
   * @throws IOException if it is not JSON or has no {@code tokens} list of non-negative ints (an
   *     empty list is returned: {@link #tokens} judges it against the prompt)
   */
  static int[] parse(byte[] body) throws IOException {
    try (JsonParser p = JSON.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException("not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken value = p.nextToken();
        if (!name.equals("tokens")) {
          p.skipChildren();
          continue;
        }
        if (value != JsonToken.START_ARRAY) {
          throw new IOException("tokens: not a list");
        }
        int[] out = new int[256];
        int n = 0;
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
          if (t != JsonToken.VALUE_NUMBER_INT) {
            throw new IOException("tokens: not a list of token ids");
          }
          long id = p.getLongValue();
          if (id < 0 || id > Integer.MAX_VALUE) {
            throw new IOException("tokens: id " + id + " out of range");
          }
          if (n == out.length) {
            out = java.util.Arrays.copyOf(out, n * 2);
          }
          out[n++] = (int) id;
        }
        return java.util.Arrays.copyOf(out, n);
      }
      throw new IOException("no tokens field");
    }
  }

  /**
   * The most tokens an answer for {@code request} may hold: the {@code /tokenize} body's bytes plus
   * {@value #TEMPLATE_TOKENS}. A byte-level BPE (GPT, Llama 3, Qwen) or byte-fallback SentencePiece
   * tokenizer gives at most one token per UTF-8 byte of text, a JSON string holds at least as many
   * bytes as the UTF-8 text it encodes, and the body holds every string the engine renders (messages,
   * tools, documents, template kwargs); what the template adds around them is bounded by {@value
   * #TEMPLATE_TOKENS}. An answer beyond this is not the prompt's tokens (a misconfigured or faulty
   * engine) and routing on it would insert pages no engine holds.
   */
  static long maxTokens(EngineTokenRequest request) {
    return (long) request.body().length + TEMPLATE_TOKENS;
  }

  /**
   * Whether the prompt has no text at all, so an empty token list is a plausible answer: a completion
   * {@code prompt} of {@code ""}, or chat messages whose {@code content} is empty, null or a list of
   * parts with empty {@code text}, without {@code tools} or {@code documents} (a template that adds
   * nothing around them renders no tokens).
   */
  static boolean withoutText(EngineTokenRequest request) {
    try {
      JsonNode root = TREE.readTree(request.body());
      if (!request.chat()) {
        return root.path("prompt").isTextual() && root.path("prompt").textValue().isEmpty();
      }
      if (root.hasNonNull("tools") || root.hasNonNull("documents")) {
        return false;
      }
      for (JsonNode m : root.path("messages")) {
        JsonNode c = m.path("content");
        if (c.isTextual() ? !c.textValue().isEmpty() : c.isArray() ? !emptyParts(c) : !(c.isNull() || c.isMissingNode())) {
          return false;
        }
      }
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static boolean emptyParts(JsonNode parts) {
    for (JsonNode p : parts) {
      if (!p.path("text").asText("").isEmpty() || !p.path("type").asText("text").equals("text")) {
        return false;
      }
    }
    return true;
  }

  /** The request to send for {@code view}, or {@code null} (see {@link EngineTokenRequest#of}). */
  static EngineTokenRequest prepare(RequestView view, String model) {
    return EngineTokenRequest.of(view, model);
  }
}
