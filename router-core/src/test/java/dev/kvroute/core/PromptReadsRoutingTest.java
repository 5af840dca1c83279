package dev.kvroute.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.index.PrefixMatch;
import dev.kvroute.core.load.BackendLoad;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.policy.PromptReads;
import dev.kvroute.core.policy.RoutingContext;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * A policy that reads nothing of the prompt is routed with no tokenizing and no prefix-index work, and
 * decides exactly as it did when the core computed everything for it; a policy that reads the prefix
 * match is routed as before.
 */
class PromptReadsRoutingTest {
  private static final int PAGE = 16;
  private static final Tokenizer TOKENS = Tokenizer.defaultTokenizer();
  private static final SingleTokenVocabulary VOCAB = SingleTokenVocabulary.of(TOKENS);
  private static final List<BackendId> ALL =
      List.of(BackendId.of("a"), BackendId.of("b"), BackendId.of("c"), BackendId.of("d"));

  /** A prompt tokenizer that counts its calls. */
  private static final class CountingTokenizer implements PromptTokenizer {
    private final PromptTokenizer inner = PromptTokenizer.create(TOKENS);
    int calls;

    @Override
    public int[] tokenize(RequestView view) {
      calls++;
      return inner.tokenize(view);
    }

    @Override
    public int[] tokenize(Endpoint endpoint, List<PromptSegment> segments) {
      calls++;
      return inner.tokenize(endpoint, segments);
    }

    @Override
    public int[] encode(String piece) {
      calls++;
      return inner.encode(piece);
    }

    @Override
    public Tokenizer tokenizer() {
      return inner.tokenizer();
    }

    @Override
    public long cachedPieces() {
      return inner.cachedPieces();
    }
  }

  /** A radix index that counts every per-request call (hashing, matching, recording). */
  private static final class CountingIndex implements PrefixIndex {
    private final PrefixIndex inner = PrefixIndex.radix(PAGE, () -> 0L);
    int calls;

    @Override
    public void addBackend(BackendId backend, long capacityTokens) {
      inner.addBackend(backend, capacityTokens);
    }

    @Override
    public void removeBackend(BackendId backend) {
      inner.removeBackend(backend);
    }

    @Override
    public void forget(BackendId backend) {
      inner.forget(backend);
    }

    @Override
    public Prompt prompt(int[] tokens) {
      calls++;
      return inner.prompt(tokens);
    }

    @Override
    public Prompt prompt(int[] tokens, long namespace) {
      calls++;
      return inner.prompt(tokens, namespace);
    }

    @Override
    public PrefixMatch match(int[] tokens) {
      calls++;
      return inner.match(tokens);
    }

    @Override
    public PrefixMatch match(Prompt prompt) {
      calls++;
      return inner.match(prompt);
    }

    @Override
    public void insert(BackendId backend, int[] tokens) {
      calls++;
      inner.insert(backend, tokens);
    }

    @Override
    public void insert(BackendId backend, Prompt prompt) {
      calls++;
      inner.insert(backend, prompt);
    }

    @Override
    public Pin insertAndPin(BackendId backend, Prompt prompt) {
      calls++;
      return inner.insertAndPin(backend, prompt);
    }

    @Override
    public long sizeTokens(BackendId backend) {
      return inner.sizeTokens(backend);
    }

    @Override
    public long estimatedBytes() {
      return inner.estimatedBytes();
    }

    @Override
    public int pageSizeTokens() {
      return inner.pageSizeTokens();
    }

    @Override
    public void checkInvariants() {
      inner.checkInvariants();
    }
  }

  /** {@code inner} as the core saw every policy before: reading the prefix match (the default). */
  private static final class ReadsEverything implements RoutingPolicy {
    private final RoutingPolicy inner;

    ReadsEverything(RoutingPolicy inner) {
      this.inner = inner;
    }

    @Override
    public String name() {
      return inner.name();
    }

    @Override
    public Decision choose(RoutingContext context) {
      return inner.choose(context);
    }
  }

  private static RoutingPolicy policy(String name) {
    return Policies.create(name, PolicyConfig.defaults(), new SplittableRandom(7));
  }

  private static RouterCore core(RoutingPolicy policy, PromptTokenizer tokenizer, PrefixIndex index) {
    RouterCore core = RouterCore.create(policy, tokenizer, index, LoadTracker.create());
    for (BackendId b : ALL) {
      core.addBackend(b, 50_000);
    }
    return core;
  }

  /**
   * 64 chat requests from 8 sessions, each resending its growing history; every third request carries
   * no session key.
   */
  private static List<RequestView> requests() {
    List<RequestView> out = new ArrayList<>();
    List<List<PromptSegment>> histories = new ArrayList<>();
    SplittableRandom random = new SplittableRandom(3);
    for (int s = 0; s < 8; s++) {
      histories.add(new ArrayList<>(List.of(PromptSegment.text("system", VOCAB.randomText(40 + s, random)))));
    }
    for (int i = 0; i < 64; i++) {
      int s = random.nextInt(8);
      List<PromptSegment> h = histories.get(s);
      h.add(PromptSegment.text("user", VOCAB.randomText(5 + random.nextInt(30), random)));
      String session = i % 3 == 0 ? null : "session-" + s;
      out.add(new RequestView(Endpoint.CHAT_COMPLETIONS, "m", session, List.copyOf(h), true, 16));
      h.add(PromptSegment.text("assistant", VOCAB.randomText(10, random)));
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(strings = {"round-robin", "random", "least-loaded", "power-of-two"})
  void aPolicyThatReadsNoPromptIsNeitherTokenizedNorIndexedAndDecidesAsBefore(String name) {
    CountingTokenizer tokenizer = new CountingTokenizer();
    CountingIndex index = new CountingIndex();
    RouterCore lean = core(policy(name), tokenizer, index);
    RouterCore full = core(new ReadsEverything(policy(name)), PromptTokenizer.create(TOKENS), PrefixIndex.radix(PAGE, () -> 0L));
    assertThat(lean.policy().reads(null)).isEqualTo(PromptReads.NONE);

    List<RouterCore.Routed> open = new ArrayList<>();
    List<RouterCore.Routed> openFull = new ArrayList<>();
    int i = 0;
    for (RequestView v : requests()) {
      RouterCore.Routed r = lean.route(v, ALL);
      RouterCore.Routed f = full.route(v, ALL);
      assertThat(r.decision().backend()).as("request %d", i).isEqualTo(f.decision().backend());
      assertThat(r.decision().rule()).isEqualTo(f.decision().rule());
      assertThat(r.reads()).isEqualTo(PromptReads.NONE);
      assertThat(r.promptTokens()).isEmpty();
      assertThat(r.predictedCachedTokens()).isZero();
      assertThat(r.decision().candidates()).allSatisfy(c -> assertThat(c.matchedTokens()).isZero());
      open.add(r);
      openFull.add(f);
      // the loads move the same way: every other request ends, some before their first token
      if (i % 2 == 1) {
        int k = i % 4 == 1 ? 0 : open.size() - 1;
        finish(open.remove(k), i);
        finish(openFull.remove(k), i);
      }
      i++;
    }
    assertThat(tokenizer.calls).as("tokenizer calls").isZero();
    assertThat(index.calls).as("index calls").isZero();
    for (BackendId b : ALL) {
      assertThat(index.sizeTokens(b)).isZero();
      // request counts agree with the full path's; prefill tokens are 0 (the prompt was not tokenized)
      BackendLoad l = lean.loads().load(b);
      BackendLoad fl = full.loads().load(b);
      assertThat(l.inFlightRequests()).isEqualTo(fl.inFlightRequests());
      assertThat(l.prefillingRequests()).isEqualTo(fl.prefillingRequests());
      assertThat(l.inFlightPrefillTokens()).isZero();
    }
    for (RouterCore.Routed r : open) {
      assertThat(r.lease().releaseReported(100)).isTrue();
    }
    assertThat(index.calls).as("index calls after release").isZero();
  }

  private static void finish(RouterCore.Routed r, int i) {
    if (i % 3 != 0) {
      r.lease().firstToken();
    }
    assertThat(r.lease().release()).isTrue();
  }

  @Test
  void stickyTokenizesOnlyWithoutASessionKeyAndNeverTouchesTheIndex() {
    CountingTokenizer tokenizer = new CountingTokenizer();
    CountingIndex index = new CountingIndex();
    RouterCore lean = core(policy("sticky"), tokenizer, index);
    RouterCore full = core(new ReadsEverything(policy("sticky")), PromptTokenizer.create(TOKENS), PrefixIndex.radix(PAGE, () -> 0L));
    int withoutKey = 0;
    for (RequestView v : requests()) {
      int before = tokenizer.calls;
      RouterCore.Routed r = lean.route(v, ALL);
      RouterCore.Routed f = full.route(v, ALL);
      assertThat(r.decision().backend()).isEqualTo(f.decision().backend());
      if (v.sessionKey() == null) {
        withoutKey++;
        assertThat(r.reads()).isEqualTo(PromptReads.TOKENS);
        assertThat(r.promptTokens()).containsExactly(f.promptTokens());
        assertThat(lean.loads().load(r.decision().backend()).inFlightPrefillTokens())
            .as("the whole prompt is charged: nothing is predicted cached").isGreaterThanOrEqualTo(r.promptTokens().length);
      } else {
        assertThat(tokenizer.calls).isEqualTo(before);
        assertThat(r.reads()).isEqualTo(PromptReads.NONE);
      }
      assertThat(r.predictedCachedTokens()).isZero();
      r.lease().release();
      f.lease().release();
    }
    assertThat(withoutKey).isPositive();
    assertThat(tokenizer.calls).isEqualTo(withoutKey);
    assertThat(index.calls).isZero();
  }

  @Test
  void cacheAwareStillTokenizesMatchesAndRecords() {
    CountingTokenizer tokenizer = new CountingTokenizer();
    CountingIndex index = new CountingIndex();
    RouterCore lean = core(policy("cache-aware"), tokenizer, index);
    RouterCore full = core(new ReadsEverything(policy("cache-aware")), PromptTokenizer.create(TOKENS), PrefixIndex.radix(PAGE, () -> 0L));
    int n = 0;
    long predicted = 0;
    for (RequestView v : requests()) {
      RouterCore.Routed r = lean.route(v, ALL);
      RouterCore.Routed f = full.route(v, ALL);
      assertThat(r.reads()).isEqualTo(PromptReads.PREFIX_MATCH);
      assertThat(r.decision().backend()).isEqualTo(f.decision().backend());
      assertThat(r.decision().rule()).isEqualTo(f.decision().rule());
      assertThat(r.predictedCachedTokens()).isEqualTo(f.predictedCachedTokens());
      assertThat(r.promptTokens()).containsExactly(f.promptTokens());
      predicted += r.predictedCachedTokens();
      r.lease().firstToken();
      r.lease().release();
      f.lease().firstToken();
      f.lease().release();
      n++;
    }
    assertThat(tokenizer.calls).isEqualTo(n);
    assertThat(index.calls).as("one prompt, one match, one insert each").isEqualTo(3 * n);
    assertThat(predicted).as("the histories were found").isPositive();
  }

  @Test
  void tokensGivenToAPolicyThatReadsNoneAreKeptAndChargedButNotIndexed() {
    CountingIndex index = new CountingIndex();
    RouterCore core = core(policy("round-robin"), new CountingTokenizer(), index);
    int[] tokens = IntStream.range(0, 100).toArray();
    RouterCore.Routed r = core.route(tokens, null, PrefixIndex.namespace("adapter"), ALL);
    assertThat(r.reads()).isEqualTo(PromptReads.NONE);
    assertThat(r.promptTokens()).isSameAs(tokens);
    assertThat(r.predictedCachedTokens()).isZero();
    assertThat(core.loads().load(r.decision().backend()).inFlightPrefillTokens()).isEqualTo(100);
    assertThat(index.calls).isZero();
    assertThat(r.lease().release()).isTrue();
    assertThat(core.loads().load(r.decision().backend())).isEqualTo(BackendLoad.IDLE);
  }

  @Test
  void explainStillShowsWhatTheIndexHolds() {
    CountingIndex index = new CountingIndex();
    RouterCore core = core(policy("round-robin"), new CountingTokenizer(), index);
    int[] tokens = IntStream.range(0, 64).toArray();
    index.insert(BackendId.of("c"), tokens); // as KV events would fill a precise index
    Decision d = core.explain(tokens, null, ALL);
    assertThat(d.candidates()).filteredOn(c -> c.backend().name().equals("c"))
        .singleElement().extracting(c -> c.matchedTokens()).isEqualTo(64);
    // and route takes the backend explain named, without reading the match
    assertThat(core.route(tokens, null, ALL).decision().backend()).isEqualTo(d.backend());
  }
}
