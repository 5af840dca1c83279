package dev.kvroute.core;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.kvevents.KvEvent;
import dev.kvroute.core.kvevents.KvEventBatch;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Candidate;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Two router replicas in front of the same engines: fed the same KV events, they make the same decision
 * for the same request, whichever of them routed the earlier traffic; predicting from what each routed
 * itself, they do not.
 */
class SeveralRoutersTest {
  private static final int PAGE = 16;
  private static final List<BackendId> ENGINES =
      List.of(BackendId.of("e0"), BackendId.of("e1"), BackendId.of("e2"), BackendId.of("e3"));

  private final AtomicLong now = new AtomicLong(1);
  private final Ticker ticker = now::get;

  /** The engines' prefix caches as they report them: every routed prompt's whole blocks. */
  private final class Engines {
    final Map<BackendId, Map<List<Integer>, Long>> blocks = new HashMap<>();
    final SplittableRandom hashes = new SplittableRandom(5);

    /** The BlockStored the engine publishes after serving {@code prompt}: only its new blocks. */
    KvEventBatch serve(BackendId engine, int[] prompt) {
      Map<List<Integer>, Long> cache = blocks.computeIfAbsent(engine, e -> new HashMap<>());
      List<Long> stored = new ArrayList<>();
      OptionalLong parent = OptionalLong.empty();
      int first = -1;
      for (int b = 0; b < prompt.length / PAGE; b++) {
        List<Integer> prefix = Arrays.stream(Arrays.copyOf(prompt, (b + 1) * PAGE)).boxed().toList();
        Long h = cache.get(prefix);
        if (h == null) {
          h = hashes.nextLong();
          cache.put(prefix, h);
          if (first < 0) {
            first = b;
          }
          stored.add(h);
        } else if (first < 0) {
          parent = OptionalLong.of(h);
        }
      }
      if (stored.isEmpty()) {
        return new KvEventBatch(1, List.of(), 0);
      }
      int[] tokens = Arrays.copyOfRange(prompt, first * PAGE, (first + stored.size()) * PAGE);
      return new KvEventBatch(1, List.of(KvEvent.BlockStored.gpu(
          stored.stream().mapToLong(Long::longValue).toArray(), parent, tokens, PAGE)), 0);
    }
  }

  private RouterCore router(Function<PrefixIndex, PrefixIndex> wrap) {
    PrefixIndex index = wrap.apply(PrefixIndex.radix(PAGE, ticker));
    RouterCore core = RouterCore.create(
        Policies.create("cache-aware", PolicyConfig.defaults(), new SplittableRandom(3)),
        PromptTokenizer.create(Tokenizer.defaultTokenizer()), index, LoadTracker.create());
    for (BackendId e : ENGINES) {
      core.addBackend(e, 1 << 20);
      if (index instanceof KvEventIndex events) {
        events.enableEvents(e);
      }
    }
    return core;
  }

  private PrefixIndex precise(PrefixIndex approximate) {
    return KvEventIndex.create(approximate, ticker, KvEventIndex.Settings.DEFAULT);
  }

  private static int[] session(int s, int turns) {
    int[] t = new int[64 * turns];
    for (int i = 0; i < t.length; i++) {
      t[i] = s * 10_000 + i;
    }
    return t;
  }

  /**
   * Sends {@code sessions} x {@code turns} requests alternately through the two routers (a session's
   * turns visit both), serving each on the chosen engine, whose events every precise router receives;
   * then asks both routers about every session's next turn.
   */
  private List<List<Decision>> run(RouterCore first, RouterCore second, boolean feedEvents) {
    Engines engines = new Engines();
    List<RouterCore> routers = List.of(first, second);
    int sent = 0;
    for (int turn = 1; turn <= 3; turn++) {
      for (int s = 0; s < 12; s++) {
        RouterCore via = routers.get(sent++ % 2);
        int[] prompt = session(s, turn);
        RouterCore.Routed routed = via.route(prompt, null, ENGINES);
        routed.lease().firstToken();
        KvEventBatch batch = engines.serve(routed.decision().backend(), prompt);
        routed.lease().release();
        if (feedEvents) {
          for (RouterCore r : routers) {
            ((KvEventIndex) r.index()).apply(routed.decision().backend(), batch, 0);
          }
        }
        now.addAndGet(Duration.ofMillis(300).toNanos());
      }
    }
    now.addAndGet(Duration.ofSeconds(3).toNanos()); // past every speculative entry
    List<List<Decision>> decisions = List.of(new ArrayList<>(), new ArrayList<>());
    for (int s = 0; s < 12; s++) {
      for (int r = 0; r < 2; r++) {
        decisions.get(r).add(routers.get(r).explain(session(s, 4), null, ENGINES));
      }
    }
    return decisions;
  }

  private static List<String> summary(List<Decision> decisions) {
    return decisions.stream()
        .map(d -> d.backend() + " " + d.candidates().stream().map(Candidate::matchedTokens).toList())
        .toList();
  }

  @Test
  void twoPreciseRoutersFedByTheSameEnginesDecideAlike() {
    List<List<Decision>> d = run(router(this::precise), router(this::precise), true);
    assertThat(summary(d.get(0))).isEqualTo(summary(d.get(1)));
    // and they know the engine that holds each session's three turns
    assertThat(d.get(0)).allSatisfy(dec -> assertThat(dec.matchedTokens()).isEqualTo(192));
  }

  @Test
  void twoApproximateRoutersEachSeeOnlyTheirOwnHalf() {
    List<List<Decision>> d = run(router(Function.identity()), router(Function.identity()), false);
    assertThat(summary(d.get(0))).isNotEqualTo(summary(d.get(1)));
    assertThat(d.get(0)).anySatisfy(dec -> assertThat(dec.matchedTokens()).isLessThan(192));
  }
}
