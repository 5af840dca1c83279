package dev.kvroute.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.index.ReferencePrefixIndex;
import dev.kvroute.core.load.BackendLoad;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Candidate;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.policy.RoutingContext;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.policy.Rule;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class RouterCoreTest {
  private static final int PAGE = 16;
  private static final PromptTokenizer TOKENIZER = PromptTokenizer.create(Tokenizer.defaultTokenizer());
  private static final SingleTokenVocabulary VOCAB =
      SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());
  private static final BackendId A = BackendId.of("a");
  private static final BackendId B = BackendId.of("b");
  private static final BackendId C = BackendId.of("c");
  private static final List<BackendId> ALL = List.of(A, B, C);

  private final ReferencePrefixIndex index = new ReferencePrefixIndex(PAGE);
  private final LoadTracker loads = LoadTracker.create();

  private RouterCore core(RoutingPolicy policy) {
    RouterCore core = RouterCore.create(policy, TOKENIZER, index, loads);
    for (BackendId b : ALL) {
      core.addBackend(b, 100_000);
    }
    return core;
  }

  private static RoutingPolicy cacheAware() {
    return Policies.create("cache-aware", PolicyConfig.defaults(), new SplittableRandom(11));
  }

  /**
   * A policy that records what it saw and delegates to round-robin; it reads the prefix match (the
   * default), so the core computes everything for it.
   */
  private static final class Recording implements RoutingPolicy {
    final List<RoutingContext> seen = new ArrayList<>();
    final RoutingPolicy inner =
        Policies.create("round-robin", PolicyConfig.defaults(), new SplittableRandom(1));
    Consumer<RoutingContext> onChoose = ctx -> {};

    @Override
    public String name() {
      return "recording";
    }

    @Override
    public Decision choose(RoutingContext context) {
      seen.add(context);
      onChoose.accept(context);
      return inner.choose(context);
    }
  }

  private static RequestView chat(List<PromptSegment> messages, String session) {
    return new RequestView(Endpoint.CHAT_COMPLETIONS, "m", session, messages, true, 64);
  }

  /**
   * Backend A alone, whose view holds 128 tokens (two 64-token prompts), under a policy that reads the
   * prefix match (round-robin itself reads none and leaves the index alone).
   */
  private RouterCore oneBackendWithRoomForTwoPrompts() {
    RouterCore core = RouterCore.create(new Recording(), TOKENIZER, PrefixIndex.radix(PAGE, Ticker.system()), loads);
    core.addBackend(A, 128);
    return core;
  }

  @Test
  void aFinishedRequestsPrefixIsTheMostRecentlyUsedAsInTheEngine() {
    // One backend with room for two 64-token prompts. A is routed first but finishes last, after B:
    // the engine's LRU order is by release, so the next prompt evicts B's blocks and keeps A's.
    RouterCore core = oneBackendWithRoomForTwoPrompts();
    int[] a = IntStream.range(0, 64).toArray();
    int[] b = IntStream.range(1_000, 1_064).toArray();
    int[] c = IntStream.range(2_000, 2_064).toArray();
    RouterCore.Routed ra = core.route(a, null, List.of(A));
    RouterCore.Routed rb = core.route(b, null, List.of(A));
    assertThat(rb.lease().release()).isTrue();
    assertThat(ra.lease().release()).isTrue();
    assertThat(ra.lease().release()).as("released once").isFalse();
    core.route(c, null, List.of(A)).lease().release();

    assertThat(core.index().match(a).matched(A)).isEqualTo(64);
    assertThat(core.index().match(b).matched(A)).isZero();
    core.index().checkInvariants();
  }

  @Test
  void anInFlightRequestsPagesArePinnedUntilItsOneRelease() {
    // Room for two 64-token prompts; A stays in flight while three others are routed and finish.
    RouterCore core = oneBackendWithRoomForTwoPrompts();
    int[] a = IntStream.range(0, 64).toArray();
    RouterCore.Routed ra = core.route(a, null, List.of(A));
    for (int i = 1; i <= 3; i++) {
      core.route(IntStream.range(i * 1_000, i * 1_000 + 64).toArray(), null, List.of(A))
          .lease().release();
      core.index().checkInvariants();
    }
    assertThat(core.index().match(a).matched(A)).as("pinned while in flight").isEqualTo(64);

    assertThat(ra.lease().release()).isTrue();
    RouterCore.Routed rb = core.route(IntStream.range(5_000, 5_064).toArray(), null, List.of(A));
    assertThat(ra.lease().release()).as("released once").isFalse();
    RouterCore.Routed rc = core.route(IntStream.range(6_000, 6_064).toArray(), null, List.of(A));
    assertThat(core.index().match(a).matched(A)).as("new pages evict nothing before their prefill")
        .isEqualTo(64);
    rb.lease().firstToken();
    rc.lease().firstToken();
    assertThat(core.index().match(a).matched(A)).as("evictable once released").isZero();
    rb.lease().release();
    rc.lease().release();
    core.index().checkInvariants();
  }

  @Test
  void nextTurnFollowsItsHistory() {
    RouterCore core = core(cacheAware());
    List<PromptSegment> history = new ArrayList<>();
    history.add(PromptSegment.text("system", VOCAB.randomText(200, new SplittableRandom(1))));
    history.add(PromptSegment.text("user", VOCAB.randomText(100, new SplittableRandom(2))));
    RouterCore.Routed first = core.route(chat(history, null), ALL);
    assertThat(first.decision().rule()).isEqualTo(Rule.CACHE_MISS);
    assertThat(first.predictedCachedTokens()).isZero();
    assertThat(first.promptTokens()).containsExactly(TOKENIZER.tokenize(chat(history, null)));
    BackendId home = first.decision().backend();
    int prompt1 = first.promptTokens().length;
    assertThat(index.sizeTokens(home)).isEqualTo(prompt1 / PAGE * PAGE);
    assertThat(loads.load(home)).isEqualTo(new BackendLoad(1, prompt1, 1, 0));
    first.lease().firstToken();
    first.lease().release();

    history.add(PromptSegment.text("assistant", VOCAB.randomText(50, new SplittableRandom(3))));
    history.add(PromptSegment.text("user", VOCAB.randomText(30, new SplittableRandom(4))));
    RouterCore.Routed second = core.route(chat(history, null), ALL);
    assertThat(second.decision().rule()).isEqualTo(Rule.CACHE_HIT);
    assertThat(second.decision().backend()).isEqualTo(home);
    // every whole page of the first prompt is shared with the second
    assertThat(second.predictedCachedTokens()).isEqualTo(prompt1 / PAGE * PAGE);
    assertThat(loads.load(home).inFlightPrefillTokens())
        .isEqualTo(second.promptTokens().length - second.predictedCachedTokens());
    second.lease().release();
    assertThat(loads.load(home)).isEqualTo(new BackendLoad(0, 0, 0, 0));
  }

  @Test
  void candidatesAreSortedDeduplicatedAndOnlyRegistered() {
    Recording policy = new Recording();
    RouterCore core = core(policy);
    LinkedHashSet<BackendId> healthy = new LinkedHashSet<>(List.of(C, BackendId.of("stranger"), A, B));
    core.route(new int[] {1, 2, 3}, null, healthy);
    core.route(new int[] {1, 2, 3}, null, List.of(B, A, B));
    assertThat(policy.seen.get(0).candidates()).extracting(Candidate::backend).containsExactly(A, B, C);
    assertThat(policy.seen.get(1).candidates()).extracting(Candidate::backend).containsExactly(A, B);
  }

  @Test
  void theLeadHashCoversSixteenTokensWhateverTheIndexsPage() {
    // sticky's fallback key: requests that share a short system prompt share it at 64-token pages too
    Recording policy = new Recording();
    RouterCore core = RouterCore.create(policy, TOKENIZER, PrefixIndex.radix(64, Ticker.system()), loads);
    core.addBackend(A, 1 << 20);
    int[] first = IntStream.range(0, 80).toArray();
    int[] second = first.clone();
    second[20] = -7; // differs after the first 16 tokens, inside the first 64-token page
    core.route(first, null, List.of(A));
    core.route(second, null, List.of(A));
    assertThat(policy.seen.get(1).leadHash()).isEqualTo(policy.seen.get(0).leadHash())
        .isEqualTo(RoutingContext.leadHash(first, RoutingContext.LEAD_TOKENS));
    second[15] = -7;
    core.route(second, null, List.of(A));
    assertThat(policy.seen.get(2).leadHash()).isNotEqualTo(policy.seen.get(0).leadHash());
  }

  @Test
  void contextCarriesPromptSessionAndLeadHash() {
    Recording policy = new Recording();
    RouterCore core = core(policy);
    int[] tokens = IntStream.range(0, 40).toArray();
    core.route(tokens, "s-1", ALL);
    RoutingContext ctx = policy.seen.get(0);
    assertThat(ctx.promptTokens()).isEqualTo(40);
    assertThat(ctx.sessionKey()).isEqualTo("s-1");
    assertThat(ctx.leadHash()).isEqualTo(RoutingContext.leadHash(tokens, RoutingContext.LEAD_TOKENS));
    int[] short1 = {5, 6, 7};
    core.route(short1, null, ALL);
    assertThat(policy.seen.get(1).leadHash()).isEqualTo(RoutingContext.leadHash(short1, RoutingContext.LEAD_TOKENS));
  }

  @Test
  void noRegisteredHealthyBackendIsAnError() {
    RouterCore core = core(cacheAware());
    assertThatThrownBy(() -> core.route(new int[] {1}, null, List.of()))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageStartingWith("healthy: no registered backend among []");
    assertThatThrownBy(() -> core.route(new int[] {1}, null, List.of(BackendId.of("x"))))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void explainHasNoSideEffects() {
    RoutingPolicy rr = Policies.create("round-robin", PolicyConfig.defaults(), new SplittableRandom(1));
    RouterCore core = core(rr);
    int[] tokens = IntStream.range(0, 64).toArray();
    Decision explained = core.explain(tokens, null, ALL);
    assertThat(core.explain(tokens, null, ALL).backend()).isEqualTo(explained.backend());
    assertThat(index.sizeTokens(A) + index.sizeTokens(B) + index.sizeTokens(C)).isZero();
    assertThat(loads.load(explained.backend())).isEqualTo(BackendLoad.IDLE);
    // the round-robin counter did not move: route takes the backend explain named
    assertThat(core.route(tokens, null, ALL).decision().backend()).isEqualTo(explained.backend());
  }

  @Test
  void explainOfAViewMatchesRoute() {
    RouterCore core = core(cacheAware());
    RequestView v =
        chat(List.of(PromptSegment.text("user", VOCAB.randomText(64, new SplittableRandom(9)))), null);
    RouterCore.Routed r = core.route(v, ALL);
    Decision again = core.explain(v, ALL);
    assertThat(again.rule()).isEqualTo(Rule.CACHE_HIT);
    assertThat(again.backend()).isEqualTo(r.decision().backend());
    assertThat(core.tokens(v)).containsExactly(r.promptTokens());
  }

  @Test
  void removedBackendLosesItsViewAndLoad() {
    RouterCore core = core(cacheAware());
    int[] tokens = IntStream.range(0, 64).toArray();
    RouterCore.Routed r = core.route(tokens, null, ALL);
    BackendId home = r.decision().backend();
    core.removeBackend(home);
    assertThat(index.sizeTokens(home)).isZero();
    assertThat(loads.load(home)).isEqualTo(BackendLoad.IDLE);
    assertThat(r.lease().release()).isTrue();
    RouterCore.Routed next = core.route(tokens, null, ALL);
    assertThat(next.decision().backend()).isNotEqualTo(home);
    assertThat(next.decision().candidates()).hasSize(2);
  }

  @Test
  void backendRemovedWhileRoutingDoesNotFailTheRequest() {
    Recording policy = new Recording();
    RouterCore core = core(policy);
    policy.onChoose = ctx -> core.removeBackend(A); // round-robin's first pick is a
    RouterCore.Routed r = core.route(IntStream.range(0, 32).toArray(), null, ALL);
    assertThat(r.decision().backend()).isEqualTo(A);
    assertThat(index.sizeTokens(A)).isZero();
    assertThat(r.lease().release()).isTrue();
  }

  @Test
  void policyIsExposed() {
    RoutingPolicy p = cacheAware();
    assertThat(core(p).policy()).isSameAs(p);
  }

  @Test
  void worksWithTheRadixIndex() {
    PrefixIndex radix = PrefixIndex.radix(PAGE, () -> 0L);
    RouterCore core = RouterCore.create(cacheAware(), TOKENIZER, radix, LoadTracker.create());
    for (BackendId b : ALL) {
      core.addBackend(b, 10_000);
    }
    int[] tokens = IntStream.range(0, 100).toArray();
    BackendId home = core.route(tokens, null, ALL).decision().backend();
    RouterCore.Routed again = core.route(tokens, null, ALL);
    assertThat(again.decision().backend()).isEqualTo(home);
    assertThat(again.predictedCachedTokens()).isEqualTo(96);
    radix.checkInvariants();
  }
}
