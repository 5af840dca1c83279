package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.PolicyConfig;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * An engine's reported cached tokens correct the approximate view: a report below the prediction
 * evicts, from that backend's view only, every unpinned page used no later than the first page the
 * engine lacked, and keeps the reported prompt's own pages (the engine has just computed them).
 */
class UsageCorrectionTest {
  private static final int PAGE = 16;
  private static final BackendId A = BackendId.of("a");
  private static final BackendId B = BackendId.of("b");

  private final AtomicLong clock = new AtomicLong();
  private final CheckedPrefixIndex index = new CheckedPrefixIndex(PAGE, clock::incrementAndGet);

  /** Whole pages whose tokens are derived from the page labels. */
  private static int[] prompt(int... pageLabels) {
    int[] tokens = new int[pageLabels.length * PAGE + 3]; // and a partial page, as a real prompt
    for (int p = 0; p < pageLabels.length; p++) {
      for (int t = 0; t < PAGE; t++) {
        tokens[p * PAGE + t] = pageLabels[p] * 1000 + t;
      }
    }
    for (int i = pageLabels.length * PAGE; i < tokens.length; i++) {
      tokens[i] = 999_000 + i;
    }
    return tokens;
  }

  /** Routes {@code tokens} to {@code backend} and serves it, as the proxy does, without a report. */
  private void served(BackendId backend, int[] tokens) {
    PrefixIndex.Pin pin = index.insertAndPin(backend, index.prompt(tokens));
    pin.confirm();
    pin.release();
  }

  @Test
  void theRuleCorrectsOnlyAReportBelowTheReportableBelief() {
    assertThat(UsageCorrection.keepPages(100, 64, -1, PAGE)).isEqualTo(-1); // not reported
    assertThat(UsageCorrection.keepPages(100, 64, 64, PAGE)).isEqualTo(-1); // as predicted
    assertThat(UsageCorrection.keepPages(100, 32, 64, PAGE)).isEqualTo(-1); // more than predicted
    assertThat(UsageCorrection.keepPages(100, 64, 63, PAGE)).isEqualTo(3); // a page short
    assertThat(UsageCorrection.keepPages(100, 64, 0, PAGE)).isZero();
    // vLLM recomputes a fully cached prompt's last token: a page-aligned prompt held whole reports a
    // page less, which is no contradiction
    assertThat(UsageCorrection.keepPages(64, 64, 48, PAGE)).isEqualTo(-1);
    assertThat(UsageCorrection.keepPages(64, 64, 32, PAGE)).isEqualTo(2);
    assertThat(UsageCorrection.keepPages(0, 0, 0, PAGE)).isEqualTo(-1);
    assertThatThrownBy(() -> UsageCorrection.keepPages(64, 64, 0, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pageSizeTokens: 0 (expected: > 0)");
  }

  @Test
  void aShortReportEvictsWhatTheEngineCannotHaveHadAndKeepsThePrompt() {
    index.addBackend(A, 100 * PAGE);
    index.addBackend(B, 100 * PAGE);
    int[] oldest = prompt(1, 2, 3);
    int[] session = prompt(5, 6, 7);
    int[] newer = prompt(8, 9);
    served(A, oldest);
    served(B, oldest);
    served(A, session);
    served(A, newer); // used after the session's last turn, before its next one
    int[] nextTurn = prompt(5, 6, 7, 10);
    assertThat(index.match(nextTurn).matched(A)).isEqualTo(48);

    // the engine evicted the session from its second page on (foreign traffic): it reports 16 of 48
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(nextTurn));
    pin.confirm();
    pin.release(16);

    // everything used no later than the session's second page is gone from A's view...
    assertThat(index.match(oldest).matched(A)).isZero();
    // ...but not the pages used after it, nor the prompt the engine has just computed again
    assertThat(index.match(newer).matched(A)).isEqualTo(32);
    assertThat(index.match(prompt(5, 6, 7, 10, 11)).matched(A)).isEqualTo(64);
    // and no other backend's view
    assertThat(index.match(oldest).matched(B)).isEqualTo(48);
    assertThat(index.correctedPages()).isEqualTo(3);
    assertThat(index.sizeTokens(A)).isEqualTo(6 * PAGE);
  }

  @Test
  void aReportAsPredictedChangesNothing() {
    index.addBackend(A, 100 * PAGE);
    int[] oldest = prompt(1, 2, 3);
    served(A, oldest);
    served(A, prompt(5, 6, 7));
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(5, 6, 7, 10)));
    pin.release(48);
    assertThat(index.match(oldest).matched(A)).isEqualTo(48);
    assertThat(index.correctedPages()).isZero();
  }

  @Test
  void pagesPinnedByRequestsInFlightSurviveTheCorrection() {
    index.addBackend(A, 100 * PAGE);
    int[] running = prompt(1, 2, 3);
    PrefixIndex.Pin inFlight = index.insertAndPin(A, index.prompt(running)); // still running
    served(A, prompt(5, 6));
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(5, 6, 7)));
    pin.release(0);
    assertThat(index.match(running).matched(A)).isEqualTo(48);
    assertThat(index.match(prompt(5, 6, 7)).matched(A)).isEqualTo(48);
    inFlight.release();
    assertThat(index.match(running).matched(A)).isEqualTo(48); // released as used now
  }

  @Test
  void anAbandonedRequestIsNotCorrectedAndOnlyTheFirstEndCounts() {
    index.addBackend(A, 100 * PAGE);
    int[] oldest = prompt(1, 2, 3);
    served(A, oldest);
    served(A, prompt(5, 6));
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(5, 6, 7)));
    pin.release();
    pin.release(0); // a second end: no effect
    assertThat(index.match(oldest).matched(A)).isEqualTo(48);
    assertThat(index.correctedPages()).isZero();
  }

  @Test
  void theLostPagesOtherBranchesGoWithIt() {
    index.addBackend(A, 100 * PAGE);
    // another conversation branching off the session's first page, used before the session's turn
    int[] branch = prompt(5, 20, 21);
    served(A, branch);
    served(A, prompt(5, 6, 7));
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(5, 6, 7, 8)));
    pin.release(0); // the engine had nothing: the branch under page 5 is gone too, page 5 is back
    assertThat(index.match(branch).matched(A)).isEqualTo(16);
    assertThat(index.match(prompt(5, 6, 7, 8)).matched(A)).isEqualTo(64);
  }

  @Test
  void aLeaseReleasedWithAShortReportCorrectsTheNextPrediction() {
    RouterCore core = RouterCore.create(
        Policies.create("cache-aware", PolicyConfig.defaults(), new SplittableRandom(1)),
        PromptTokenizer.create(Tokenizer.defaultTokenizer()), index, LoadTracker.create());
    core.addBackend(A, 100 * PAGE);
    List<BackendId> only = List.of(A);
    int[] other = prompt(1, 2, 3);
    int[] session = prompt(5, 6, 7);
    for (int[] p : List.of(other, session)) {
      RouterCore.Routed r = core.route(p, null, only);
      r.lease().firstToken();
      assertThat(r.lease().releaseReported(0)).isTrue(); // a first turn: nothing predicted, nothing to correct
    }
    assertThat(core.explain(other, null, only).matchedTokens()).isEqualTo(48);

    RouterCore.Routed next = core.route(prompt(5, 6, 7, 10), null, only);
    assertThat(next.predictedCachedTokens()).isEqualTo(48);
    next.lease().firstToken();
    assertThat(next.lease().releaseReported(0)).isTrue(); // the engine had lost the whole session
    assertThat(next.lease().releaseReported(0)).isFalse();

    assertThat(core.explain(other, null, only).matchedTokens()).isZero(); // corrected
    assertThat(core.explain(prompt(5, 6, 7, 10, 11), null, only).matchedTokens()).isEqualTo(64);
    assertThat(core.loads().load(A).inFlightRequests()).isZero();
  }
}
