package dev.kvroute.bench.jmh;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.core.tokenize.TokenizerSpec;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Latency of routing one chat request whose history is already cached: the body of a
 * {@code /v1/chat/completions} request with a {@code historyTokens}-token conversation (a system
 * prompt, then user and assistant turns, all routed before so the chosen backend's view and the
 * tokenizer's segment cache hold them) plus a new 100-token user message that neither has seen.
 *
 * <ul>
 *   <li>{@code routeRequest}: what the proxy does per request before forwarding it: parse the body
 *       ({@link RequestParser}), tokenize it ({@link PromptTokenizer}: only the new message misses
 *       the segment cache), one index descent, the {@code cache-aware} policy, the insert into the
 *       chosen backend's view, and the load lease (released at once so loads stay level).
 *   <li>{@code parseAndTokenize}: the first two steps only; {@code parse}: the first alone.
 *   <li>{@code routeTokens}: {@link RouterCore#route(int[], String, java.util.Collection)} on the
 *       already tokenized prompt: the index descent, the policy, the insert and the lease.
 *   <li>{@code baselineJacksonTree}: a fixed reference that no kvroute change touches: Jackson's
 *       {@code readTree} of the same body. The machine is shared, so compare each figure with this
 *       one from the same run rather than with another run's figures.
 *   <li>{@code baselineUncached}: what a router without a piece cache pays: Jackson's tree of the
 *       body and every piece of the chat template encoded by the tokenizer, as
 *       {@link PromptTokenizer} renders it (checked equal at setup).
 * </ul>
 *
 * <p>{@code tokenizerSpec} runs every benchmark with the default tokenizer ({@code o200k_base} over the
 * router's own chat rendering) and with the model's own ({@code hf:qwen3}, {@code hf:llama3_1}: the
 * real Qwen3 and Llama 3.1 tokenizer.json and chat template, the history's tokens from the prefix
 * cache, only the window rendered and its new chunk encoded), in the same run, so that each hf
 * figure is read as a ratio to o200k's from that run (issue 14: within 1.5x at p50).
 *
 * <p>8 backends x 200K tokens, page 16, {@code cache-aware}
 * with default thresholds. The new message is drawn and the body assembled (and for
 * {@code routeTokens}, parsed and tokenized) in a per-invocation setup, outside the measured time;
 * each invocation takes tens of microseconds or more, so the setup's timestamps distort it little.
 * Target: p99 under 1 ms (issue 2).
 *
 * <p>Run (after {@code mvn -B -q -o -pl router-core install -DskipTests} and
 * {@code mvn -B -q -pl microbench -am package -DskipTests}):
 *
 * <pre>{@code
 * java -jar microbench/target/microbench.jar RoutingBenchmark -f 1 -wi 3 -i 5
 * }</pre>
 *
 * <p>Figures are in {@code docs/performance.md}.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
public class RoutingBenchmark {
  private static final int BACKENDS = 8;
  private static final long CAPACITY_TOKENS = 200_000;
  private static final int NEW_MESSAGE_TOKENS = 100;
  private static final String SESSION = "session-1";
  private static final ObjectMapper MAPPER = new ObjectMapper();

  /** The router core with the conversation's history already routed, and the request template. */
  @State(Scope.Thread)
  public static class Fleet {
    @Param("32000")
    public int historyTokens;

    /**
     * {@code o200k_base} (the default path), or {@code hf:NAME}: the real tokenizer.json and chat
     * template from {@code $KVROUTE_TOKENIZERS_DIR/NAME} (default {@code
     * ~/.cache/kvroute-tokenizers/NAME}, installed by {@code docker/ci/setup-tokenizers.sh}); {@code
     * hf} alone is {@code hf:qwen3}.
     */
    @Param({"o200k_base", "hf:qwen3", "hf:llama3_1"})
    public String tokenizerSpec;

    RequestParser parser;
    Tokenizer base;
    PromptTokenizer tokenizer;
    RouterCore core;
    List<BackendId> healthy;
    SingleTokenVocabulary vocabulary;
    SplittableRandom random;
    byte[] head;
    byte[] tail;

    @Setup(Level.Trial)
    public void setUp() throws InvalidRequestException, java.io.IOException {
      base = Tokenizer.defaultTokenizer();
      vocabulary = SingleTokenVocabulary.of(base);
      boolean hf = tokenizerSpec.startsWith("hf");
      tokenizer = hf
          ? TokenizerSpec.parse("hf:" + modelDir(tokenizerSpec.equals("hf") ? "qwen3" : tokenizerSpec.substring(3)))
              .load(java.time.InstantSource.system(), PromptTokenizer.DEFAULT_CACHE_BYTES)
          : PromptTokenizer.create(base);
      parser = RequestParser.create();
      core = RouterCore.create(
          Policies.create("cache-aware", PolicyConfig.defaults(), new SplittableRandom(1)),
          tokenizer, PrefixIndex.radix(16, Ticker.system()), LoadTracker.create());
      healthy = new ArrayList<>();
      for (int b = 0; b < BACKENDS; b++) {
        healthy.add(BackendId.of("engine-" + b));
        core.addBackend(healthy.get(b), CAPACITY_TOKENS);
      }
      random = new SplittableRandom(42);

      StringBuilder json = new StringBuilder("{\"model\":\"bench\",\"stream\":true,")
          .append("\"user\":\"" + SESSION + "\",\"messages\":[");
      appendMessage(json, "system", vocabulary.randomText(2_000, random));
      int tokens = 2_000;
      boolean user = true;
      while (tokens < historyTokens) {
        int n = Math.min(historyTokens - tokens, user ? 300 : 700);
        json.append(',');
        appendMessage(json, user ? "user" : "assistant", vocabulary.randomText(n, random));
        tokens += n;
        user = !user;
      }
      json.append(",{\"role\":\"user\",\"content\":\"");
      head = json.toString().getBytes(StandardCharsets.UTF_8);
      tail = "\"}]}".getBytes(StandardCharsets.UTF_8);

      for (int i = 0; i < 50; i++) { // the history is now cached in a view and in the tokenizer
        RequestView view = parser.parse(Endpoint.CHAT_COMPLETIONS, nextBody(), name -> null);
        core.route(view, healthy).lease().release();
      }
      byte[] check = nextBody();
      int[] expected = tokenizer.tokenize(parser.parse(Endpoint.CHAT_COMPLETIONS, check, name -> null));
      if (!hf && !java.util.Arrays.equals(expected, uncachedTokens(base, check))) {
        throw new IllegalStateException("baselineUncached renders the prompt differently");
      }
    }

    private static java.nio.file.Path modelDir(String name) {
      String dir = System.getenv("KVROUTE_TOKENIZERS_DIR");
      java.nio.file.Path base = dir == null || dir.isBlank()
          ? java.nio.file.Path.of(System.getProperty("user.home"), ".cache", "kvroute-tokenizers")
          : java.nio.file.Path.of(dir);
      java.nio.file.Path model = base.resolve(name);
      if (!java.nio.file.Files.isRegularFile(model.resolve("tokenizer.json"))) {
        throw new IllegalStateException("no " + name + " tokenizer in " + model + " (run docker/ci/setup-tokenizers.sh)");
      }
      return model;
    }

    /** The request body with a new {@value #NEW_MESSAGE_TOKENS}-token user message. */
    byte[] nextBody() {
      byte[] message = escape(vocabulary.randomText(NEW_MESSAGE_TOKENS, random))
          .getBytes(StandardCharsets.UTF_8);
      ByteArrayOutputStream out = new ByteArrayOutputStream(head.length + message.length + 8);
      out.writeBytes(head);
      out.writeBytes(message);
      out.writeBytes(tail);
      return out.toByteArray();
    }
  }

  /** A request body neither the tokenizer nor the index has seen. */
  @State(Scope.Thread)
  public static class FreshBody {
    byte[] body;

    @Setup(Level.Invocation)
    public void next(Fleet fleet) {
      body = fleet.nextBody();
    }
  }

  /** The tokens of a request the index has not seen. */
  @State(Scope.Thread)
  public static class FreshPrompt {
    int[] tokens;

    @Setup(Level.Invocation)
    public void next(Fleet fleet) throws InvalidRequestException {
      tokens = fleet.tokenizer.tokenize(
          fleet.parser.parse(Endpoint.CHAT_COMPLETIONS, fleet.nextBody(), name -> null));
    }
  }

  @Benchmark
  public RouterCore.Routed routeRequest(Fleet fleet, FreshBody request)
      throws InvalidRequestException {
    RequestView view = fleet.parser.parse(Endpoint.CHAT_COMPLETIONS, request.body, name -> null);
    RouterCore.Routed routed = fleet.core.route(view, fleet.healthy);
    routed.lease().release();
    return routed;
  }

  @Benchmark
  public int[] parseAndTokenize(Fleet fleet, FreshBody request) throws InvalidRequestException {
    return fleet.tokenizer.tokenize(
        fleet.parser.parse(Endpoint.CHAT_COMPLETIONS, request.body, name -> null));
  }

  /** The body parse alone ({@link RequestParser#parse}): issue 18's parser work, without tokenizing. */
  @Benchmark
  public RequestView parse(Fleet fleet, FreshBody request) throws InvalidRequestException {
    return fleet.parser.parse(Endpoint.CHAT_COMPLETIONS, request.body, name -> null);
  }

  @Benchmark
  public RouterCore.Routed routeTokens(Fleet fleet, FreshPrompt prompt) {
    RouterCore.Routed routed = fleet.core.route(prompt.tokens, SESSION, fleet.healthy);
    routed.lease().release();
    return routed;
  }

  @Benchmark
  public JsonNode baselineJacksonTree(FreshBody request) throws java.io.IOException {
    return MAPPER.readTree(request.body);
  }

  @Benchmark
  public int[] baselineUncached(Fleet fleet, FreshBody request) throws java.io.IOException {
    return uncachedTokens(fleet.base, request.body);
  }

  /** The chat template of {@link PromptTokenizer} over a Jackson tree, every piece encoded anew. */
  static int[] uncachedTokens(Tokenizer base, byte[] body) throws java.io.IOException {
    JsonNode messages = MAPPER.readTree(body).get("messages");
    List<int[]> pieces = new ArrayList<>(3 * messages.size() + 1);
    int total = 0;
    for (JsonNode m : messages) {
      pieces.add(base.encode(PromptTokenizer.IM_START + m.get("role").textValue() + "\n"));
      pieces.add(base.encode(m.get("content").textValue()));
      pieces.add(base.encode(PromptTokenizer.IM_END));
      total += pieces.get(pieces.size() - 3).length + pieces.get(pieces.size() - 2).length
          + pieces.get(pieces.size() - 1).length;
    }
    pieces.add(base.encode(PromptTokenizer.GENERATION_PROMPT));
    total += pieces.get(pieces.size() - 1).length;
    int[] out = new int[total];
    int at = 0;
    for (int[] p : pieces) {
      System.arraycopy(p, 0, out, at, p.length);
      at += p.length;
    }
    return out;
  }

  private static void appendMessage(StringBuilder json, String role, String content) {
    json.append("{\"role\":\"").append(role).append("\",\"content\":\"")
        .append(escape(content)).append("\"}");
  }

  private static String escape(String text) {
    StringBuilder out = new StringBuilder(text.length() + 16);
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }
}
