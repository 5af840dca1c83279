package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class PromptTokenizerTest {
  private static final Tokenizer BASE = Tokenizer.defaultTokenizer();

  /** Counts encode calls per text, to prove what the cache saves. */
  static final class CountingTokenizer implements Tokenizer {
    final ConcurrentHashMap<String, AtomicInteger> calls = new ConcurrentHashMap<>();

    @Override
    public int[] encode(String text) {
      calls.computeIfAbsent(text, t -> new AtomicInteger()).incrementAndGet();
      return BASE.encode(text);
    }

    @Override
    public String decode(int[] tokenIds) {
      return BASE.decode(tokenIds);
    }

    @Override
    public String name() {
      return "counting";
    }

    int calls(String text) {
      AtomicInteger c = calls.get(text);
      return c == null ? 0 : c.get();
    }
  }

  private static RequestView chat(PromptSegment... segments) {
    return new RequestView(Endpoint.CHAT_COMPLETIONS, "m", null, List.of(segments), false, -1);
  }

  private static int[] concat(int[]... parts) {
    return java.util.Arrays.stream(parts).flatMapToInt(IntStream::of).toArray();
  }

  @Test
  void chatTemplateIsPiecewiseChatMl() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    int[] tokens =
        pt.tokenize(
            chat(PromptSegment.text("system", "Be brief."), PromptSegment.text("user", "Hi there")));
    int[] expected =
        concat(
            BASE.encode("<|im_start|>system\n"),
            BASE.encode("Be brief."),
            BASE.encode("<|im_end|>\n"),
            BASE.encode("<|im_start|>user\n"),
            BASE.encode("Hi there"),
            BASE.encode("<|im_end|>\n"),
            BASE.encode("<|im_start|>assistant\n"));
    assertThat(tokens).containsExactly(expected);
  }

  @Test
  void chatPromptIsPrefixOfNextTurn() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    PromptSegment sys = PromptSegment.text("system", "You are helpful.");
    PromptSegment u1 = PromptSegment.text("user", "What is KV cache?");
    PromptSegment a1 = PromptSegment.text("assistant", " the key value cache");
    PromptSegment u2 = PromptSegment.text("user", "And prefix caching?");
    int[] turn1 = pt.tokenize(chat(sys, u1));
    int[] turn2 = pt.tokenize(chat(sys, u1, a1, u2));
    // turn 1's prompt plus the reply and its end marker lead turn 2.
    int[] withReply =
        concat(turn1, BASE.encode(" the key value cache"), BASE.encode("<|im_end|>\n"));
    assertThat(java.util.Arrays.copyOf(turn2, withReply.length)).containsExactly(withReply);
  }

  @Test
  void completionTextIsEncodedAsIsAndTokenIdsAreUsedAsGiven() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    RequestView text =
        new RequestView(
            Endpoint.COMPLETIONS, null, null, List.of(PromptSegment.text(null, "Once upon")), false, 5);
    assertThat(pt.tokenize(text)).containsExactly(BASE.encode("Once upon"));
    RequestView ids =
        new RequestView(
            Endpoint.SGLANG_GENERATE,
            null,
            null,
            List.of(PromptSegment.tokens(new int[] {7, 3, 999_999})),
            false,
            -1);
    assertThat(pt.tokenize(ids)).containsExactly(7, 3, 999_999);
  }

  @Test
  void multiTurnRequestOnlyEncodesItsNewestMessage() {
    CountingTokenizer counting = new CountingTokenizer();
    PromptTokenizer pt = PromptTokenizer.create(counting);
    List<PromptSegment> history = new ArrayList<>();
    history.add(PromptSegment.text("system", "long system prompt"));
    for (int turn = 0; turn < 20; turn++) {
      history.add(PromptSegment.text("user", "question " + turn));
      pt.tokenize(chat(history.toArray(PromptSegment[]::new)));
      history.add(PromptSegment.text("assistant", "answer " + turn));
    }
    assertThat(counting.calls("long system prompt")).isEqualTo(1);
    assertThat(counting.calls("question 0")).isEqualTo(1);
    assertThat(counting.calls("question 19")).isEqualTo(1);
    assertThat(counting.calls("answer 3")).isEqualTo(1);
    assertThat(counting.calls("<|im_start|>user\n")).isEqualTo(1);
  }

  @Test
  void disabledCacheGivesSameTokens() {
    PromptTokenizer cached = PromptTokenizer.create(BASE);
    PromptTokenizer uncached = PromptTokenizer.create(BASE, 0);
    RequestView v =
        chat(PromptSegment.text("user", "abc def"), PromptSegment.text("assistant", "ghi"));
    assertThat(uncached.tokenize(v)).containsExactly(cached.tokenize(v));
    assertThat(uncached.tokenize(v)).containsExactly(cached.tokenize(v));
    assertThat(uncached.cachedPieces()).isZero();
  }

  @Test
  void cacheIsBoundedByBytes() {
    PromptTokenizer pt = PromptTokenizer.create(BASE, 10_000);
    for (int i = 0; i < 500; i++) {
      pt.encode("piece number " + i);
    }
    // each piece weighs 4 bytes per token + 128
    assertThat(pt.cachedPieces()).isPositive().isLessThanOrEqualTo(10_000 / 128);
  }

  private static final RequestParser PARSER = RequestParser.create();

  private static RequestView parse(String json) throws InvalidRequestException {
    return PARSER.parse(Endpoint.CHAT_COMPLETIONS, json.getBytes(StandardCharsets.UTF_8), n -> null);
  }

  private static String body(String... contents) {
    StringBuilder sb = new StringBuilder("{\"messages\":[");
    for (int i = 0; i < contents.length; i++) {
      sb.append(i == 0 ? "" : ",").append("{\"role\":\"").append(i % 2 == 0 ? "user" : "assistant")
          .append("\",\"content\":\"").append(contents[i]).append("\"}");
    }
    return sb.append("]}").toString();
  }

  @Test
  void parsedBodiesGiveTheSameTokensCachedAndUncached() throws Exception {
    PromptTokenizer cached = PromptTokenizer.create(BASE);
    PromptTokenizer uncached = PromptTokenizer.create(BASE, 0);
    String json = body("caf\\u00e9 \\\"quoted\\\" line\\nbreak", "😀 \\ud83d\\ude00 tab\\t", "x".repeat(5_000), "");
    RequestView v = parse(json);
    int[] expected = concat(
        BASE.encode("<|im_start|>user\n"), BASE.encode("café \"quoted\" line\nbreak"), BASE.encode("<|im_end|>\n"),
        BASE.encode("<|im_start|>assistant\n"), BASE.encode("😀 😀 tab\t"), BASE.encode("<|im_end|>\n"),
        BASE.encode("<|im_start|>user\n"), BASE.encode("x".repeat(5_000)), BASE.encode("<|im_end|>\n"),
        BASE.encode("<|im_start|>assistant\n"), BASE.encode("<|im_end|>\n"),
        BASE.encode("<|im_start|>assistant\n"));
    assertThat(uncached.tokenize(v)).containsExactly(expected);
    assertThat(cached.tokenize(v)).containsExactly(expected); // misses
    assertThat(cached.tokenize(parse(json))).containsExactly(expected); // hits
    assertThat(uncached.cachedPieces()).isZero();
  }

  @Test
  void sameTextEscapedOrNotSharesOneCacheEntry() throws Exception {
    CountingTokenizer counting = new CountingTokenizer();
    PromptTokenizer pt = PromptTokenizer.create(counting);
    int[] raw = pt.tokenize(parse(body("café 😀 \\\\n"))); // JSON \\n: a backslash and an n
    int[] escaped = pt.tokenize(parse(body("caf\\u00e9 \\ud83d\\ude00 \\u005cn")));
    int[] given = pt.tokenize(chat(PromptSegment.text("user", "café 😀 \\n")));
    assertThat(escaped).containsExactly(raw);
    assertThat(given).containsExactly(raw);
    assertThat(counting.calls("café 😀 \\n")).isEqualTo(1);
  }

  @Test
  void cacheHitsNeverDecodeTheBody() throws Exception {
    CountingTokenizer counting = new CountingTokenizer();
    PromptTokenizer pt = PromptTokenizer.create(counting);
    String history = "a long history message";
    pt.tokenize(parse(body(history)));
    byte[] next = body(history, "a new reply").getBytes(StandardCharsets.UTF_8);
    RequestView view = PARSER.parse(Endpoint.CHAT_COMPLETIONS, next, n -> null);
    // Overwrite the cached message's bytes: a hit must not need them.
    int at = new String(next, StandardCharsets.ISO_8859_1).indexOf(history);
    java.util.Arrays.fill(next, at, at + history.length(), (byte) 'z');
    int[] tokens = pt.tokenize(view);
    assertThat(tokens).containsExactly(
        PromptTokenizer.create(BASE, 0).tokenize(parse(body(history, "a new reply"))));
    assertThat(counting.calls(history)).isEqualTo(1);
    assertThat(counting.calls("a new reply")).isEqualTo(1);
  }

  @Test
  void aMissOnABodyChangedSinceParsingFailsRatherThanTokenizeOtherText() throws Exception {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    byte[] bytes = body("never seen before").getBytes(StandardCharsets.UTF_8);
    RequestView view = PARSER.parse(Endpoint.CHAT_COMPLETIONS, bytes, n -> null);
    int at = new String(bytes, StandardCharsets.ISO_8859_1).indexOf("never");
    bytes[at] = 'N';
    assertThatThrownBy(() -> pt.tokenize(view))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("request body changed after parsing");
  }

  @Test
  void differentPiecesOfEqualLengthGetTheirOwnTokens() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    for (int i = 0; i < 2_000; i++) {
      String piece = String.format("piece %04d", i);
      assertThat(pt.encode(piece)).as(piece).containsExactly(BASE.encode(piece));
    }
    for (int i = 0; i < 2_000; i++) { // now from the cache
      String piece = String.format("piece %04d", i);
      assertThat(pt.encode(piece)).as(piece).containsExactly(BASE.encode(piece));
    }
  }

  @Test
  void encodeReturnsCallersOwnArray() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    int[] first = pt.encode("hello world");
    first[0] = -1;
    assertThat(pt.encode("hello world")).containsExactly(BASE.encode("hello world"));
  }

  @Test
  void negativeCacheBytesIsRejected() {
    assertThatThrownBy(() -> PromptTokenizer.create(BASE, -1))
        .hasMessage("maxCacheBytes: -1 (expected: >= 0)");
  }
}
