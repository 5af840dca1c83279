package dev.kvroute.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Routing a request view (its tokens and page hashes taken from the previous turn's, {@link
 * RouterCore#route(RequestView, long, java.util.Collection)}) decides, predicts and indexes exactly
 * as routing its tokens hashed from scratch: two routers, one fed views and one fed tokens, over
 * random multi-turn sessions with releases interleaved, in small views that evict.
 */
class PrefixedRoutingEquivalenceTest {
  private static final List<BackendId> BACKENDS =
      List.of(BackendId.of("a"), BackendId.of("b"), BackendId.of("c"), BackendId.of("d"));

  private static RouterCore core(AtomicLong clock, int pageSize) {
    RouterCore core = RouterCore.create(
        Policies.create("cache-aware", PolicyConfig.defaults(), new SplittableRandom(7)),
        PromptTokenizer.create(Tokenizer.defaultTokenizer()),
        PrefixIndex.radix(pageSize, clock::get), LoadTracker.create());
    for (BackendId b : BACKENDS) {
      core.addBackend(b, 3_000);
    }
    return core;
  }

  private static String text(SplittableRandom random) {
    return "turn " + random.nextInt(1_000_000) + " " + "words ".repeat(random.nextInt(1, 80));
  }

  @Test
  void routingAViewDecidesAsRoutingItsTokens() {
    for (int pageSize : new int[] {16, 7}) {
      AtomicLong clock = new AtomicLong();
      RouterCore byView = core(clock, pageSize);
      RouterCore byTokens = core(clock, pageSize);
      SplittableRandom random = new SplittableRandom(pageSize);
      List<List<PromptSegment>> sessions = new ArrayList<>();
      ArrayDeque<RouterCore.Routed[]> running = new ArrayDeque<>();
      int hits = 0;
      for (int i = 0; i < 600; i++) {
        clock.addAndGet(1_000);
        List<PromptSegment> messages;
        if (sessions.size() < 12 || random.nextInt(8) == 0) {
          messages = new ArrayList<>(List.of(PromptSegment.text("system", "Shared system prompt. ".repeat(20))));
          sessions.add(messages);
        } else {
          messages = sessions.get(random.nextInt(sessions.size()));
          messages.add(PromptSegment.text("assistant", text(random)));
        }
        messages.add(PromptSegment.text("user", text(random)));
        long namespace = random.nextInt(4) == 0 ? PrefixIndex.namespace("lora") : 0L;
        RequestView view = new RequestView(Endpoint.CHAT_COMPLETIONS, "m", "s", List.copyOf(messages), true, 64);
        RouterCore.Routed a = byView.route(view, namespace, BACKENDS);
        RouterCore.Routed b = byTokens.route(byTokens.tokens(view), "s", namespace, BACKENDS);
        Decision da = a.decision();
        Decision db = b.decision();
        assertThat(a.promptTokens()).containsExactly(b.promptTokens());
        assertThat(da.backend()).as("request %d", i).isEqualTo(db.backend());
        assertThat(da.matchedTokens()).isEqualTo(db.matchedTokens());
        assertThat(a.predictedCachedTokens()).isEqualTo(b.predictedCachedTokens());
        hits += da.matchedTokens() > 0 ? 1 : 0;
        running.add(new RouterCore.Routed[] {a, b});
        while (running.size() > random.nextInt(1, 6)) {
          RouterCore.Routed[] done = running.poll();
          clock.addAndGet(500);
          done[0].lease().release();
          done[1].lease().release();
        }
      }
      assertThat(hits).isGreaterThan(300); // the index was exercised, not empty
      byView.index().checkInvariants();
      for (BackendId backend : BACKENDS) {
        assertThat(byView.index().sizeTokens(backend)).isEqualTo(byTokens.index().sizeTokens(backend));
      }
      for (List<PromptSegment> messages : sessions) {
        RequestView view = new RequestView(Endpoint.CHAT_COMPLETIONS, "m", null, List.copyOf(messages), true, 64);
        int[] tokens = byTokens.tokens(view);
        assertThat(byView.index().match(tokens)).isEqualTo(byTokens.index().match(tokens));
      }
    }
  }
}
