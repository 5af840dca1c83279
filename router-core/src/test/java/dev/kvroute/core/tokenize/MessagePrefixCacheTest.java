package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.index.PageHashes;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.KeptSegment;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class MessagePrefixCacheTest {
  private static final Tokenizer BASE = Tokenizer.defaultTokenizer();
  private static final BackendId BACKEND = BackendId.of("a");

  private static PrefixIndex index() {
    PrefixIndex index = PrefixIndex.radix(16, () -> 0L);
    index.addBackend(BACKEND, 1 << 20);
    return index;
  }

  private static RequestView chat(List<PromptSegment> messages) {
    return new RequestView(Endpoint.CHAT_COMPLETIONS, "m", null, List.copyOf(messages), false, -1);
  }

  /** Routes {@code view} through an index as the router does, and keeps its hashes. */
  private static PrefixedTokens routed(PromptTokenizer pt, PrefixIndex index, RequestView view) {
    PrefixedTokens t = pt.tokenizePrefixed(view);
    PrefixIndex.Prompt p = index.prompt(t.tokens(), 0L, t.knownPageHashes(), t.sharedTokens());
    index.match(p);
    index.insert(BACKEND, p);
    t.remember(p.pageHashes());
    return t;
  }

  @Test
  void theNextTurnSharesThePreviousTurnsMessages() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    PrefixIndex index = index();
    List<PromptSegment> messages = new ArrayList<>(List.of(
        PromptSegment.text("system", "be brief ".repeat(30)), PromptSegment.text("user", "hello there")));
    PrefixedTokens first = routed(pt, index, chat(messages));
    assertThat(first.sharedTokens()).isZero();
    messages.add(PromptSegment.text("assistant", "general kenobi ".repeat(10)));
    messages.add(PromptSegment.text("user", "and then?"));
    PrefixedTokens second = routed(pt, index, chat(messages));
    int generationPrompt = BASE.encode(PromptTokenizer.GENERATION_PROMPT).length;
    assertThat(second.sharedTokens()).isEqualTo(first.tokens().length - generationPrompt);
    assertThat(second.knownPageHashes().pages()).isEqualTo(first.tokens().length / 16);
    assertThat(second.tokens()).containsExactly(PromptTokenizer.create(BASE, 0).tokenize(chat(messages)));
    // the first turn's prompt was superseded by the second's: one prompt kept
    assertThat(((CachingPromptTokenizer) pt).cachedPrompts()).isEqualTo(1);
  }

  @Test
  void uncachedCodePointsCountWhatTheNextTokenizingWouldEncode() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    PrefixIndex index = index();
    String system = "be brief, é ".repeat(30);
    List<PromptSegment> messages = new ArrayList<>(List.of(
        PromptSegment.text("system", system), PromptSegment.text("user", "hello there")));
    // a new conversation: every message
    assertThat(pt.uncachedCodePoints(chat(messages))).isEqualTo(system.length() + "hello there".length());
    routed(pt, index, chat(messages));
    // the same prompt again: kept whole
    assertThat(pt.uncachedCodePoints(chat(messages))).isZero();
    // the next turn: only its new messages
    messages.add(PromptSegment.text("assistant", "general kenobi"));
    messages.add(PromptSegment.text("user", "and then?"));
    assertThat(pt.uncachedCodePoints(chat(messages))).isEqualTo("general kenobi".length() + "and then?".length());
    // another conversation with the same system prompt: its pieces are cached, not its prompt
    List<PromptSegment> other = List.of(PromptSegment.text("system", system), PromptSegment.text("user", "bonjour"));
    assertThat(pt.uncachedCodePoints(chat(other))).isEqualTo("bonjour".length());
    // asking touched nothing: the conversation's prompt is still the one kept
    assertThat(((CachingPromptTokenizer) pt).cachedPrompts()).isEqualTo(1);
  }

  @Test
  void theEstimatesProbeServesOnlyTheTokenizingOfTheSameView() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    PromptTokenizer reference = PromptTokenizer.create(BASE, 0);
    PrefixIndex index = index();
    List<PromptSegment> messages = new ArrayList<>(List.of(
        PromptSegment.text("system", "be brief ".repeat(30)), PromptSegment.text("user", "hello there")));
    routed(pt, index, chat(messages));
    messages.add(PromptSegment.text("assistant", "general kenobi ".repeat(10)));
    messages.add(PromptSegment.text("user", "and then?"));
    RequestView next = chat(messages);
    // as the proxy does: the estimate, then the tokenizing of that view (which takes its probe)
    assertThat(pt.uncachedCodePoints(next)).isEqualTo("general kenobi ".length() * 10 + "and then?".length());
    PrefixedTokens turn = routed(pt, index, next);
    assertThat(turn.tokens()).containsExactly(reference.tokenize(next));
    assertThat(turn.sharedTokens()).isPositive();
    // an estimate of one view, then the tokenizing of another: the other is probed afresh
    List<PromptSegment> other = List.of(PromptSegment.text("system", "be brief ".repeat(30)),
        PromptSegment.text("user", "something else"));
    RequestView estimated = chat(messages);
    pt.uncachedCodePoints(estimated);
    PrefixedTokens tokenized = routed(pt, index, chat(other));
    assertThat(tokenized.tokens()).containsExactly(reference.tokenize(chat(other)));
    assertThat(tokenized.sharedTokens()).as("shares no kept prompt's messages").isZero();
  }

  @Test
  void theEstimatesProbeServesATokenizingOnAnotherThread() throws Exception {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    PromptTokenizer reference = PromptTokenizer.create(BASE, 0);
    PrefixIndex index = index();
    List<PromptSegment> messages = new ArrayList<>(List.of(
        PromptSegment.text("system", "be brief ".repeat(30)), PromptSegment.text("user", "hello there")));
    PrefixedTokens first = routed(pt, index, chat(messages));
    messages.add(PromptSegment.text("assistant", "general kenobi ".repeat(10)));
    messages.add(PromptSegment.text("user", "and then?"));
    RequestView next = chat(messages);
    // the estimate on this thread (an event loop's), as the proxy does for a prompt it sends off the loop
    pt.uncachedCodePoints(next);
    // meanwhile another request with the same messages is routed: its prompt supersedes the first turn's
    PrefixedTokens twin = routed(pt, index, chat(messages));
    assertThat(twin.sharedTokens()).isEqualTo(first.sharedTokens() + first.tokens().length
        - BASE.encode(PromptTokenizer.GENERATION_PROMPT).length);
    // the tokenizing on another thread (a body worker's) takes the estimate's probe: the first turn's
    // prompt it found, not the twin's that a fresh probe would find
    java.util.concurrent.ExecutorService worker = java.util.concurrent.Executors.newSingleThreadExecutor();
    try {
      PrefixedTokens turn = worker.submit(() -> routed(pt, index, next)).get();
      assertThat(turn.tokens()).containsExactly(reference.tokenize(next));
      assertThat(turn.sharedTokens()).isEqualTo(first.tokens().length
          - BASE.encode(PromptTokenizer.GENERATION_PROMPT).length);
      // taken once: the same view tokenized again probes afresh and finds the kept prompt of all its messages
      assertThat(worker.submit(() -> pt.tokenizePrefixed(next)).get().sharedTokens())
          .isEqualTo(twin.tokens().length - BASE.encode(PromptTokenizer.GENERATION_PROMPT).length);
    } finally {
      worker.shutdownNow();
    }
  }

  @Test
  void aPlainTokenizingDropsTheEstimatesProbe() {
    // a policy that reads tokens but no prefix match (sticky without a session key): estimate, then
    // tokenize(view); the probe must not keep the view (and its request body) alive
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    List<java.lang.ref.WeakReference<RequestView>> views = new ArrayList<>();
    for (int i = 0; i < 3 * CachingPromptTokenizer.PROBE_SLOTS; i++) {
      RequestView v = chat(List.of(PromptSegment.text("user", "question " + i + " " + "x".repeat(2_000))));
      pt.uncachedCodePoints(v);
      assertThat(pt.tokenize(v)).containsExactly(PromptTokenizer.create(BASE, 0).tokenize(v));
      views.add(new java.lang.ref.WeakReference<>(v));
    }
    // the views are unreachable once collected (a full collection, asked for until it comes)
    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(5)).untilAsserted(() -> {
      System.gc();
      assertThat(views).as("views no probe holds").allMatch(w -> w.get() == null);
    });
  }

  @Test
  void aZeroBoundKeepsNothing() {
    PromptTokenizer pt = PromptTokenizer.create(BASE, 0);
    PrefixIndex index = index();
    List<PromptSegment> messages = new ArrayList<>(List.of(PromptSegment.text("user", "hi ".repeat(50))));
    routed(pt, index, chat(messages));
    messages.add(PromptSegment.text("user", "again"));
    assertThat(routed(pt, index, chat(messages)).sharedTokens()).isZero();
    assertThat(((CachingPromptTokenizer) pt).cachedPrompts()).isZero();
  }

  @Test
  void theBoundHoldsOverManyConversations() {
    long bound = 1L << 20;
    CachingPromptTokenizer pt = new CachingPromptTokenizer(BASE, 4 * bound); // a quarter for prompts
    PrefixIndex index = index();
    for (int s = 0; s < 400; s++) {
      routed(pt, index, chat(List.of(PromptSegment.text("user", "conversation " + s + " word".repeat(2_000)))));
    }
    assertThat(pt.cachedPromptBytes()).isPositive().isLessThanOrEqualTo(bound);
    assertThat(pt.cachedPrompts()).isLessThan(400);
    // least recently used first: the newest conversations are kept, the oldest went
    List<PromptSegment> newest = new ArrayList<>(
        List.of(PromptSegment.text("user", "conversation 399" + " word".repeat(2_000))));
    List<PromptSegment> oldest = new ArrayList<>(
        List.of(PromptSegment.text("user", "conversation 0" + " word".repeat(2_000))));
    newest.add(PromptSegment.text("user", "more"));
    oldest.add(PromptSegment.text("user", "more"));
    assertThat(routed(pt, index, chat(newest)).sharedTokens()).isPositive();
    assertThat(routed(pt, index, chat(oldest)).sharedTokens()).isZero();
  }

  @Test
  void questionsOnOneContextKeepItAndTheNextTurnSupersedesIt() {
    CachingPromptTokenizer pt = new CachingPromptTokenizer(BASE, PromptTokenizer.DEFAULT_CACHE_BYTES);
    PrefixIndex index = index();
    List<PromptSegment> context = List.of(
        PromptSegment.text("system", "few-shot ".repeat(40)), PromptSegment.text("assistant", "ok"));
    routed(pt, index, chat(context));
    for (int q = 0; q < 3; q++) {
      List<PromptSegment> question = new ArrayList<>(context);
      question.add(PromptSegment.text("user", "question " + q));
      assertThat(routed(pt, index, chat(question)).sharedTokens()).as("question %d", q).isPositive();
    }
    assertThat(pt.cachedPrompts()).isEqualTo(4); // the context and its three questions
    List<PromptSegment> nextTurn = new ArrayList<>(context);
    nextTurn.add(PromptSegment.text("user", "question 0"));
    nextTurn.add(PromptSegment.text("assistant", "answer 0"));
    nextTurn.add(PromptSegment.text("user", "and?"));
    assertThat(routed(pt, index, chat(nextTurn)).sharedTokens()).isPositive();
    assertThat(pt.cachedPrompts()).isEqualTo(4); // question 0's prompt superseded by its next turn
  }

  @Test
  void completionsAndTokenIdsAreNotKeptByMessages() {
    PromptTokenizer pt = PromptTokenizer.create(BASE);
    RequestView completion = new RequestView(Endpoint.COMPLETIONS, "m", null,
        List.of(PromptSegment.text(null, "once upon a time")), false, -1);
    PrefixedTokens t = pt.tokenizePrefixed(completion);
    assertThat(t.tokens()).containsExactly(pt.tokenize(completion));
    t.remember(PageHashes.NONE);
    assertThat(pt.tokenizePrefixed(completion).sharedTokens()).isZero();
    assertThat(((CachingPromptTokenizer) pt).cachedPrompts()).isZero();
  }

  private static final dev.kvroute.core.request.RequestParser PARSER =
      dev.kvroute.core.request.RequestParser.create("X-Session", "user", false);

  /** A chat body of {@code contents} (alternating user and assistant, JSON-escaped by the caller). */
  private static byte[] body(List<String> contents) {
    StringBuilder b = new StringBuilder("{\"model\": \"m\", \"messages\": [");
    for (int i = 0; i < contents.size(); i++) {
      b.append(i == 0 ? "" : ", ").append("{\"role\": \"").append(i % 2 == 0 ? "user" : "assistant")
          .append("\", \"content\": \"").append(contents.get(i)).append("\"}");
    }
    return b.append("]}").toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  private static RequestView parsed(byte[] body) throws Exception {
    return PARSER.parse(Endpoint.CHAT_COMPLETIONS, body, h -> null);
  }

  @ParameterizedTest
  @EnumSource(KeptSegment.Form.class)
  void aTurnReadFromABodyFindsThePreviousTurnByItsBytesEvenAfterThatBodyIsReused(KeptSegment.Form form) throws Exception {
    PromptTokenizer pt = new CachingPromptTokenizer(BASE, PromptTokenizer.DEFAULT_CACHE_BYTES, form);
    PrefixIndex index = index();
    List<String> contents = new ArrayList<>(List.of("tell me \\\"more\\\" ".repeat(20), "sure, \\u00e9t\u00e9 ".repeat(10),
        "go on"));
    byte[] first = body(contents);
    PrefixedTokens t1 = routed(pt, index, parsed(first));
    assertThat(t1.sharedTokens()).isZero();
    java.util.Arrays.fill(first, (byte) ' '); // the first request's buffer, reused for other bytes
    contents.add("ok: " + "x".repeat(200));
    contents.add("and?");
    RequestView next = parsed(body(contents));
    PrefixedTokens t2 = routed(pt, index, next);
    int generationPrompt = BASE.encode(PromptTokenizer.GENERATION_PROMPT).length;
    assertThat(t2.sharedTokens()).isEqualTo(t1.tokens().length - generationPrompt);
    assertThat(t2.tokens()).containsExactly(PromptTokenizer.create(BASE, 0).tokenize(next));
  }

  @ParameterizedTest
  @EnumSource(KeptSegment.Form.class)
  void aConversationSharingOnlyTheFingerprintedBytesSharesNothing(KeptSegment.Form form) throws Exception {
    PromptTokenizer pt = new CachingPromptTokenizer(BASE, PromptTokenizer.DEFAULT_CACHE_BYTES, form);
    PrefixIndex index = index();
    // 100 bytes, the same but at byte 20, which no fingerprint word covers (0-7, 30-37, 61-68, 92-99)
    String kept = "a".repeat(100);
    String other = "a".repeat(20) + "b" + "a".repeat(79);
    RequestView keptView = parsed(body(List.of(kept, "fine")));
    RequestView otherView = parsed(body(List.of(other, "fine")));
    assertThat(otherView.segments().get(0).fingerprint()).isEqualTo(keptView.segments().get(0).fingerprint());
    assertThat(otherView.segments().get(0).sameText(keptView.segments().get(0))).isFalse();
    routed(pt, index, keptView);
    assertThat(pt.uncachedCodePoints(otherView)).as("the same key, other bytes: cold text counts as cold")
        .isEqualTo(other.length()); // "fine" is a cached piece
    assertThat(pt.uncachedCodePoints(parsed(body(List.of(kept, "fine"))))).isZero();
    RequestView next = parsed(body(List.of(other, "fine", "question")));
    PrefixedTokens t = routed(pt, index, next);
    assertThat(t.sharedTokens()).as("the same key, other bytes: a miss").isZero();
    assertThat(t.tokens()).containsExactly(PromptTokenizer.create(BASE, 0).tokenize(next));
    // while the kept conversation's own next turn still finds it
    assertThat(routed(pt, index, parsed(body(List.of(kept, "fine", "question")))).sharedTokens()).isPositive();
  }
}
