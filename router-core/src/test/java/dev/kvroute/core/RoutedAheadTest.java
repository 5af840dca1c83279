package dev.kvroute.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * {@link RouterCore#routeAhead}: a prompt routed on what the router knows of it before its new text
 * is encoded decides on the match of its known leading messages, and {@link RouterCore.RoutedAhead#record}
 * later puts the whole prompt in the chosen backend's view, however far its lease has gone by then.
 */
class RoutedAheadTest {
  private static final List<BackendId> BACKENDS =
      List.of(BackendId.of("a"), BackendId.of("b"), BackendId.of("c"), BackendId.of("d"));
  private static final int PAGE = 16;

  private final AtomicLong clock = new AtomicLong();

  private RouterCore core(String policy) {
    RouterCore core = RouterCore.create(Policies.create(policy, PolicyConfig.defaults(), new SplittableRandom(7)),
        PromptTokenizer.create(Tokenizer.defaultTokenizer()), PrefixIndex.radix(PAGE, clock::get), LoadTracker.create());
    for (BackendId b : BACKENDS) {
      core.addBackend(b, 1_000_000);
    }
    return core;
  }

  private static String words(String seed, int n) {
    SplittableRandom random = new SplittableRandom(seed.hashCode());
    StringBuilder b = new StringBuilder(seed);
    for (int i = 0; i < n; i++) {
      b.append(' ').append("prefill decode cache page token router".split(" ")[random.nextInt(6)]).append(random.nextInt(1000));
    }
    return b.toString();
  }

  private static RequestView chat(List<PromptSegment> messages) {
    return new RequestView(Endpoint.CHAT_COMPLETIONS, "m", null, List.copyOf(messages), true, 64);
  }

  @Test
  void aNewConversationIsDecidedOnNothingAndRecordedWholeLater() {
    RouterCore core = core("cache-aware");
    List<PromptSegment> messages = new ArrayList<>(List.of(PromptSegment.text("system", words("new system", 2_000)),
        PromptSegment.text("user", "hello")));
    RequestView view = chat(messages);
    int[] expected = core.tokens(chat(messages)); // through a fresh view: encodes, keeps no prompt

    RouterCore.RoutedAhead ahead = core.routeAhead(view, 0L, BACKENDS);

    assertThat(ahead.decision().matchedTokens()).isZero();
    assertThat(ahead.predictedCachedTokens()).isZero();
    assertThat(ahead.promptTokens()).isEmpty();
    assertThat((double) ahead.promptLength()).as("the estimate").isBetween(0.5 * expected.length, 2.0 * expected.length);
    BackendId chosen = ahead.decision().backend();
    assertThat(core.index().sizeTokens(chosen)).isZero();

    ahead.record();
    assertThat(ahead.promptTokens()).containsExactly(expected);
    assertThat(ahead.promptLength()).isEqualTo(expected.length);
    assertThat(core.index().match(expected).matched(chosen)).isEqualTo(expected.length / PAGE * PAGE);
    ahead.lease().firstToken();
    ahead.lease().release();

    // the next turn is routed as usual and finds the whole first turn where it went
    messages.add(PromptSegment.text("assistant", "hi"));
    messages.add(PromptSegment.text("user", "and then?"));
    RouterCore.Routed next = core.route(chat(messages), 0L, BACKENDS);
    assertThat(next.decision().backend()).isEqualTo(chosen);
    assertThat(next.decision().matchedTokens()).isGreaterThanOrEqualTo(expected.length / PAGE * PAGE - PAGE);
    core.index().checkInvariants();
  }

  @Test
  void aLongPasteAfterAKnownConversationGoesWhereTheConversationIs() {
    RouterCore core = core("cache-aware");
    List<PromptSegment> messages = new ArrayList<>(List.of(PromptSegment.text("system", words("system", 400)),
        PromptSegment.text("user", words("question", 50))));
    RouterCore.Routed first = core.route(chat(messages), 0L, BACKENDS);
    first.lease().firstToken();
    first.lease().release();
    int firstTokens = first.promptLength();

    messages.add(PromptSegment.text("assistant", "a short answer"));
    messages.add(PromptSegment.text("user", words("a long paste", 3_000)));
    RequestView view = chat(messages);
    assertThat(core.uncachedCodePoints(view)).isGreaterThan(8_000);
    RouterCore.RoutedAhead ahead = core.routeAhead(view, 0L, BACKENDS);

    assertThat(ahead.decision().backend()).isEqualTo(first.decision().backend());
    // the known lead is the first turn's messages (its generation prompt aside), matched by whole pages
    assertThat(ahead.decision().matchedTokens()).isGreaterThan(firstTokens - 2 * PAGE).isLessThanOrEqualTo(firstTokens);
    assertThat(ahead.promptTokens().length).isLessThan(firstTokens);
    ahead.record();
    assertThat(ahead.promptTokens()).containsExactly(core.tokens(chat(messages)));
    ahead.lease().release();
    core.index().checkInvariants();
  }

  @Test
  void aRequestThatEndsBeforeItsPromptIsRecordedLeavesItAsOneThatEndedAfter() {
    RouterCore served = core("cache-aware");
    RouterCore refused = core("cache-aware");
    List<PromptSegment> messages = List.of(PromptSegment.text("system", words("ends early", 1_500)),
        PromptSegment.text("user", "hello"));

    RouterCore.RoutedAhead a = served.routeAhead(chat(messages), 0L, BACKENDS);
    a.lease().firstToken();
    assertThat(a.lease().release()).isTrue();
    assertThat(a.lease().releaseUnserved()).isFalse(); // the first end counts
    a.record();
    int[] tokens = a.promptTokens();
    assertThat(served.index().match(tokens).matched(a.decision().backend())).isEqualTo(tokens.length / PAGE * PAGE);

    RouterCore.RoutedAhead b = refused.routeAhead(chat(messages), 0L, BACKENDS);
    assertThat(b.lease().releaseUnserved()).isTrue(); // the backend refused it: nothing new there
    b.record();
    assertThat(refused.index().sizeTokens(b.decision().backend())).isZero();
    assertThat(refused.loads().load(b.decision().backend()).inFlightRequests()).isZero();
    served.index().checkInvariants();
    refused.index().checkInvariants();
  }

  @Test
  void nothingIsRoutedAheadForAPolicyThatReadsNoMatchOrAPromptNotInMessages() {
    List<PromptSegment> messages = List.of(PromptSegment.text("user", words("plain", 2_000)));
    assertThat(core("round-robin").routeAhead(chat(messages), 0L, BACKENDS)).isNull();
    RequestView completion = new RequestView(Endpoint.COMPLETIONS, "m", null, messages, true, 64);
    assertThat(core("cache-aware").routeAhead(completion, 0L, BACKENDS)).isNull();
  }
}
