package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.core.tokenize.TokenizerSpec;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The engine-token cache against real renderings: the mock engine's {@code /tokenize} is the model's
 * tokenizer over the request ({@code o200k_base} over the ChatML rendering; the real Qwen3 and Llama 3.1
 * tokenizers and chat templates when their files are installed, see {@link HfTokenizerPredictionIT}).
 * Over a generated corpus of multi-turn chats (system prompts, tool definitions, tool calls and runs of
 * tool results, reasoning, CJK, emoji, empty messages), replayed turn by turn:
 *
 * <ul>
 *   <li>the {@code /tokenize} body the router builds renders to exactly the tokens of the request itself;
 *   <li>every exact hit equals a full tokenization of the request;
 *   <li>every prefix reuse is a prefix of the full tokenization (what "stable" means), and the cache
 *       does save calls.
 * </ul>
 */
final class EngineTokenCacheTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final RequestParser PARSER = RequestParser.create();
  private static final String[] WORDS = ("the router keeps a prefix index of every engine cache and sends each "
      + "turn where its history already lives 前缀 缓存 命中 😀 🚀 café naïve e\u0301").split(" ");

  private record Tally(int requests, int calls, int exact, int prefix) {}

  @Test
  void o200kChatMlRendering() throws Exception {
    Tally t = replay(PromptTokenizer.create(Tokenizer.jtokkit("o200k_base")), 0.5, false);
    assertThat(t.prefix()).as("prefix reuses").isGreaterThan(20);
    assertThat(t.exact()).as("exact hits").isGreaterThan(20);
    assertThat(t.calls()).isLessThan(t.requests() * 3 / 4);
  }

  @Test
  void qwen3Template() throws Exception {
    Path dir = HfTokenizerPredictionIT.qwen3();
    Tally t = replay(TokenizerSpec.parse("hf:" + dir).load(java.time.InstantSource.system(), 16 << 20), 0.5, true);
    assertThat(t.prefix()).as("prefix reuses").isGreaterThan(20);
    assertThat(t.calls()).isLessThan(t.requests() * 3 / 4);
  }

  @Test
  void llama31Template() throws Exception {
    Path dir = HfTokenizerPredictionIT.qwen3().getParent().resolve("llama3_1");
    org.junit.jupiter.api.Assumptions.assumeTrue(Files.isRegularFile(dir.resolve("tokenizer.json")),
        "no llama3_1 tokenizer in " + dir);
    Tally t = replay(TokenizerSpec.parse("hf:" + dir).load(java.time.InstantSource.system(), 16 << 20), 0.5, true);
    assertThat(t.prefix()).as("prefix reuses").isGreaterThan(20);
  }

  @Test
  void reuseZeroOnlyReusesExactRequests() throws Exception {
    Tally t = replay(PromptTokenizer.create(Tokenizer.jtokkit("o200k_base")), 0, false);
    assertThat(t.prefix()).isZero();
    assertThat(t.calls() + t.exact()).isEqualTo(t.requests());
  }

  @Test
  void aMarginIsLearnedOnlyFromTheEngineAndAGrowingOneIsCounted() throws Exception {
    EngineTokenCache cache = new EngineTokenCache(1 << 20, 1.0);
    EngineTokenRequest one = request(List.of("a"));
    EngineTokenRequest two = request(List.of("a", "b", "c"));
    EngineTokenRequest three = request(List.of("a", "b", "c", "d", "e"));
    assertThat(cache.lookup(one).kind()).isEqualTo(EngineTokenCache.Kind.MISS);
    cache.store(one, new int[] {1, 2, 9}, cache.lookup(one));
    EngineTokenCache.Lookup miss = cache.lookup(two);
    assertThat(miss.kind()).as("no margin learned yet").isEqualTo(EngineTokenCache.Kind.MISS);
    assertThat(miss.earlier()).containsExactly(1, 2, 9);
    cache.store(two, new int[] {1, 2, 3, 4, 5, 9}, miss); // the answer's last token was the generation prompt
    assertThat(cache.margin(three)).isEqualTo(1);
    EngineTokenCache.Lookup reused = cache.lookup(three);
    assertThat(reused.kind()).isEqualTo(EngineTokenCache.Kind.PREFIX);
    assertThat(reused.tokens()).containsExactly(1, 2, 3, 4, 5);
    assertThat(cache.lookup(two).tokens()).containsExactly(1, 2, 3, 4, 5, 9);
    // a rendering that rewrites more of the end than seen so far: the margin grows, and it is counted
    EngineTokenRequest branch = request(List.of("a", "b", "c", "x", "y"));
    EngineTokenCache.Lookup probe = new EngineTokenCache.Lookup(EngineTokenCache.Kind.MISS, null,
        cache.lookup(two).tokens(), 3);
    cache.store(branch, new int[] {1, 2, 3, 4, 7, 7, 9}, probe);
    assertThat(cache.margin(three)).isEqualTo(2);
    assertThat(cache.corrections()).isEqualTo(1);
    EngineTokenRequest otherModel = EngineTokenRequest.of(EngineTokenRequestTest.view(Endpoint.CHAT_COMPLETIONS,
        new String(three.body(), StandardCharsets.UTF_8)), "other");
    assertThat(cache.margin(otherModel)).as("margins are per model").isEqualTo(-1);
    // a run of tool results is never continued from the cache
    EngineTokenRequest tools = EngineTokenRequest.of(EngineTokenRequestTest.view(Endpoint.CHAT_COMPLETIONS,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"tool\",\"content\":\"t\"}]}"), "m");
    EngineTokenRequest more = EngineTokenRequest.of(EngineTokenRequestTest.view(Endpoint.CHAT_COMPLETIONS,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"tool\",\"content\":\"t\"},"
            + "{\"role\":\"tool\",\"content\":\"u\"}]}"), "m");
    cache.store(tools, new int[] {1, 5, 9}, cache.lookup(tools));
    assertThat(cache.lookup(more).kind()).isEqualTo(EngineTokenCache.Kind.MISS);
    assertThat(cache.lookup(more).earlier()).isNull();
  }

  private static EngineTokenRequest request(List<String> contents) throws Exception {
    ObjectNode body = JSON.createObjectNode().put("model", "m");
    ArrayNode messages = body.putArray("messages");
    for (int i = 0; i < contents.size(); i++) {
      messages.addObject().put("role", i % 2 == 0 ? "user" : "assistant").put("content", contents.get(i));
    }
    return EngineTokenRequest.of(EngineTokenRequestTest.view(Endpoint.CHAT_COMPLETIONS, JSON.writeValueAsString(body)),
        "m");
  }

  /**
   * Replays 60 conversations of 4 to 9 turns (each request also repeated now and then, as a client
   * retry would), with {@code engine} as the engine's tokenizer.
   */
  private static Tally replay(PromptTokenizer engine, double reuse, boolean tools) throws Exception {
    EngineTokenCache cache = new EngineTokenCache(64 << 20, reuse);
    SplittableRandom random = new SplittableRandom(7);
    int requests = 0;
    int calls = 0;
    int exact = 0;
    int prefix = 0;
    for (int c = 0; c < 60; c++) {
      for (String body : conversation(random, tools && c % 2 == 0)) {
        int repeats = random.nextInt(5) == 0 ? 2 : 1;
        for (int rep = 0; rep < repeats; rep++) {
          requests++;
          RequestView view = EngineTokenRequestTest.view(Endpoint.CHAT_COMPLETIONS, body);
          int[] full = engine.tokenize(view);
          EngineTokenRequest r = EngineTokenRequest.of(view, "m");
          EngineTokenCache.Lookup found = cache.lookup(r);
          switch (found.kind()) {
            case EXACT -> {
              exact++;
              assertThat(found.tokens()).as("exact hit of %s", body).containsExactly(full);
            }
            case PREFIX -> {
              prefix++;
              assertThat(found.tokens().length).isLessThan(full.length);
              assertThat(Arrays.copyOf(full, found.tokens().length)).as("reused prefix of %s", body)
                  .containsExactly(found.tokens());
            }
            default -> {
              calls++;
              String sent = new String(r.body(), StandardCharsets.UTF_8);
              int[] answer = engine.tokenize(EngineTokenRequestTest.view(Endpoint.CHAT_COMPLETIONS, sent));
              assertThat(answer).as("/tokenize of %s", sent).containsExactly(full);
              cache.store(r, answer, found);
            }
          }
        }
      }
    }
    assertThat(cache.corrections()).as("observations beyond a margin in use").isZero();
    return new Tally(requests, calls, exact, prefix);
  }

  /** The request bodies of one multi-turn chat, one per turn. */
  private static List<String> conversation(SplittableRandom random, boolean tools) throws Exception {
    List<String> out = new ArrayList<>();
    ObjectNode body = JSON.createObjectNode().put("model", "m").put("max_tokens", 8);
    if (tools) {
      ObjectNode fn = body.putArray("tools").addObject().put("type", "function").putObject("function");
      fn.put("name", "lookup").put("description", "Look a word up");
      fn.putObject("parameters").put("type", "object").putObject("properties").putObject("word").put("type", "string");
    }
    if (random.nextBoolean()) {
      body.putObject("chat_template_kwargs").put("enable_thinking", random.nextBoolean());
    }
    ArrayNode messages = body.putArray("messages");
    if (random.nextInt(3) > 0) {
      messages.addObject().put("role", "system").put("content", words(random, 20 + random.nextInt(200)));
    }
    int turns = 4 + random.nextInt(6);
    for (int turn = 0; turn < turns; turn++) {
      messages.addObject().put("role", "user").put("content", random.nextInt(12) == 0 ? "" : words(random, 5 + random.nextInt(60)));
      out.add(JSON.writeValueAsString(body));
      if (tools && random.nextBoolean()) {
        ObjectNode call = messages.addObject().put("role", "assistant").put("content", "");
        if (random.nextBoolean()) {
          call.put("reasoning_content", words(random, 3 + random.nextInt(10)));
        }
        int n = 1 + random.nextInt(2);
        ArrayNode calls = call.putArray("tool_calls");
        for (int k = 0; k < n; k++) {
          ObjectNode tc = calls.addObject().put("id", "call_" + turn + "_" + k).put("type", "function");
          tc.putObject("function").put("name", "lookup").put("arguments", "{\"word\": \"" + words(random, 1) + "\"}");
        }
        for (int k = 0; k < n; k++) {
          messages.addObject().put("role", "tool").put("tool_call_id", "call_" + turn + "_" + k)
              .put("content", words(random, 3 + random.nextInt(20)));
          out.add(JSON.writeValueAsString(body)); // the model is asked again after the tool results
        }
      }
      ObjectNode reply = messages.addObject().put("role", "assistant").put("content", words(random, 5 + random.nextInt(40)));
      if (random.nextInt(4) == 0) {
        reply.put("reasoning_content", words(random, 3 + random.nextInt(10)));
      }
    }
    return out;
  }

  private static String words(SplittableRandom random, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) {
      if (i > 0) {
        sb.append(' ');
      }
      sb.append(WORDS[random.nextInt(WORDS.length)]);
    }
    return sb.toString();
  }
}
