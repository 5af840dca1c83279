package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.BackendId;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class RadixPrefixIndexTest {
  private static final int PAGE = 16;
  private static final BackendId A = BackendId.of("a");
  private static final BackendId B = BackendId.of("b");
  private static final BackendId C = BackendId.of("c");

  private final AtomicLong clock = new AtomicLong();
  private final CheckedPrefixIndex index = new CheckedPrefixIndex(PAGE, clock::incrementAndGet);

  /** {@code pages} whole pages whose tokens are derived from the given page labels. */
  private static int[] prompt(int... pageLabels) {
    int[] tokens = new int[pageLabels.length * PAGE];
    for (int p = 0; p < pageLabels.length; p++) {
      for (int t = 0; t < PAGE; t++) {
        tokens[p * PAGE + t] = pageLabels[p] * 1000 + t;
      }
    }
    return tokens;
  }

  private static int[] withExtra(int[] tokens, int extra) {
    int[] longer = java.util.Arrays.copyOf(tokens, tokens.length + extra);
    for (int i = tokens.length; i < longer.length; i++) {
      longer[i] = 777_000 + i;
    }
    return longer;
  }

  @Test
  void emptyIndexMatchesNothing() {
    PrefixMatch match = index.match(prompt(1, 2));
    assertThat(match.promptTokens()).isEqualTo(32);
    assertThat(match.matchedTokens()).isEmpty();
    assertThat(match.matched(A)).isZero();
  }

  @Test
  void registeredBackendWithNothingCachedMatchesZero() {
    index.addBackend(A, 1000);
    assertThat(index.match(prompt(1, 2)).matchedTokens()).isEqualTo(Map.of(A, 0));
    assertThat(index.match(new int[0]).matchedTokens()).isEqualTo(Map.of(A, 0));
  }

  @Test
  void insertedPromptMatchesItsWholePagesAndIgnoresTheTrailingPartialPage() {
    index.addBackend(A, 1000);
    index.insert(A, withExtra(prompt(1, 2), 5));
    assertThat(index.sizeTokens(A)).isEqualTo(32);
    assertThat(index.match(withExtra(prompt(1, 2), 5)).matched(A)).isEqualTo(32);
    assertThat(index.match(prompt(1, 2, 3)).matched(A)).isEqualTo(32);
    assertThat(index.match(prompt(1)).matched(A)).isEqualTo(16);
    assertThat(index.match(prompt(1, 9)).matched(A)).isEqualTo(16);
    assertThat(index.match(prompt(9, 2)).matched(A)).isZero();
  }

  @Test
  void promptShorterThanAPageIsNeitherIndexedNorMatched() {
    index.addBackend(A, 1000);
    int[] short15 = IntStream.range(0, 15).toArray();
    index.insert(A, short15);
    assertThat(index.sizeTokens(A)).isZero();
    assertThat(index.nodeCount()).isZero();
    index.insert(A, IntStream.range(0, 16).toArray());
    assertThat(index.match(short15).matched(A)).isZero();
    assertThat(index.match(IntStream.range(0, 16).toArray()).matched(A)).isEqualTo(16);
  }

  @Test
  void reinsertingTheSamePromptDoesNotGrowTheView() {
    index.addBackend(A, 1000);
    index.insert(A, prompt(1, 2, 3));
    index.insert(A, prompt(1, 2, 3));
    index.insert(A, prompt(1, 2));
    assertThat(index.sizeTokens(A)).isEqualTo(48);
    assertThat(index.nodeCount()).isEqualTo(3);
  }

  @Test
  void oneDescentReturnsEachBackendsOwnMatch() {
    index.addBackend(A, 1000);
    index.addBackend(B, 1000);
    index.addBackend(C, 1000);
    index.insert(A, prompt(1, 2, 3, 4));
    index.insert(B, prompt(1, 2));
    index.insert(C, prompt(5));
    assertThat(index.match(prompt(1, 2, 3, 4, 5)).matchedTokens())
        .isEqualTo(Map.of(A, 64, B, 32, C, 0));
    assertThat(index.nodeCount()).isEqualTo(5);
  }

  @Test
  void matchCountsOnlyPagesConsecutiveFromTheFirst() {
    // B holds pages 2 and 3 only after a different first page, so for prompt (1, 2, 3) it matches
    // nothing; an index keyed by unchained page hashes would credit it with two pages.
    index.addBackend(A, 1000);
    index.addBackend(B, 1000);
    index.insert(A, prompt(1));
    index.insert(B, prompt(9, 2, 3));
    PrefixMatch match = index.match(prompt(1, 2, 3));
    assertThat(match.matched(A)).isEqualTo(16);
    assertThat(match.matched(B)).isZero();
  }

  @Test
  void capacityZeroHoldsNothing() {
    index.addBackend(A, 0);
    index.insert(A, prompt(1, 2, 3));
    assertThat(index.sizeTokens(A)).isZero();
    assertThat(index.nodeCount()).isZero();
    assertThat(index.match(prompt(1, 2, 3)).matchedTokens()).isEqualTo(Map.of(A, 0));
  }

  @Test
  void capacityCountsWholePagesOnly() {
    index.addBackend(A, 2 * PAGE + PAGE - 1);
    index.insert(A, prompt(1, 2, 3, 4));
    assertThat(index.sizeTokens(A)).isEqualTo(32);
    assertThat(index.match(prompt(1, 2, 3, 4)).matched(A)).isEqualTo(32);
  }

  @Test
  void promptLongerThanCapacityKeepsItsFirstPages() {
    index.addBackend(A, 3 * PAGE);
    index.insert(A, prompt(7, 8));
    index.insert(A, prompt(1, 2, 3, 4, 5));
    assertThat(index.match(prompt(1, 2, 3, 4, 5)).matched(A)).isEqualTo(48);
    assertThat(index.match(prompt(7, 8)).matched(A)).isZero();
    assertThat(index.nodeCount()).isEqualTo(3);
  }

  @Test
  void evictsLeastRecentlyUsedPrompt() {
    index.addBackend(A, 4 * PAGE);
    index.insert(A, prompt(1, 2));
    index.insert(A, prompt(3, 4));
    index.insert(A, prompt(5, 6));
    PrefixMatch match = index.match(prompt(1, 2));
    assertThat(match.matched(A)).isZero();
    assertThat(index.match(prompt(3, 4)).matched(A)).isEqualTo(32);
    assertThat(index.match(prompt(5, 6)).matched(A)).isEqualTo(32);
    assertThat(index.sizeTokens(A)).isEqualTo(64);
  }

  @Test
  void evictsTailFirstSoASharedHeadSurvives() {
    // llm-d's approximate index inserts a prompt's pages head first into a flat LRU and so evicts
    // the shared head (page 0) before its tails; vLLM frees the tail first, as must this index.
    index.addBackend(A, 4 * PAGE);
    index.insert(A, prompt(0, 1, 2)); // s, x1, x2
    index.insert(A, prompt(0, 3)); // s, y1
    index.insert(A, prompt(0, 4)); // s, z1: evicts x2, the least recent leaf
    assertThat(index.match(prompt(0, 1, 2)).matched(A)).isEqualTo(32);
    assertThat(index.match(prompt(0, 3)).matched(A)).isEqualTo(32);
    assertThat(index.match(prompt(0, 4)).matched(A)).isEqualTo(32);
    index.insert(A, prompt(5)); // evicts x1, now a leaf and the least recent
    assertThat(index.match(prompt(0, 1, 2)).matched(A)).isEqualTo(16);
    assertThat(index.match(prompt(0, 3)).matched(A)).isEqualTo(32);
    assertThat(index.match(prompt(5)).matched(A)).isEqualTo(16);
  }

  @Test
  void longPromptIsEvictedFromItsTail() {
    index.addBackend(A, 5 * PAGE);
    index.insert(A, prompt(1, 2, 3, 4));
    index.insert(A, prompt(8, 9)); // needs one page: page 4 of the older prompt goes
    assertThat(index.match(prompt(1, 2, 3, 4)).matched(A)).isEqualTo(48);
    index.insert(A, prompt(8, 9, 10, 11)); // two more: pages 3 and 2
    assertThat(index.match(prompt(1, 2, 3, 4)).matched(A)).isEqualTo(16);
  }

  @Test
  void matchDoesNotRefreshRecency() {
    index.addBackend(A, 2 * PAGE);
    index.insert(A, prompt(1));
    index.insert(A, prompt(2));
    index.match(prompt(1));
    index.insert(A, prompt(3));
    assertThat(index.match(prompt(1)).matched(A)).isZero();
    assertThat(index.match(prompt(2)).matched(A)).isEqualTo(16);
  }

  @Test
  void insertRefreshesRecencyOfTheWholePath() {
    index.addBackend(A, 3 * PAGE);
    index.insert(A, prompt(1, 2));
    index.insert(A, prompt(3));
    index.insert(A, prompt(1)); // page 1 refreshed, page 2 not
    index.insert(A, prompt(4)); // evicts page 2 (least recent leaf), then...
    assertThat(index.match(prompt(1, 2)).matched(A)).isEqualTo(16);
    index.insert(A, prompt(5)); // ...page 3
    assertThat(index.match(prompt(3)).matched(A)).isZero();
    assertThat(index.match(prompt(1)).matched(A)).isEqualTo(16);
  }

  @Test
  void lruOrderFollowsOperationsEvenWhenTheClockStandsStill() {
    CheckedPrefixIndex frozen = new CheckedPrefixIndex(PAGE, () -> 42L);
    frozen.addBackend(A, 2 * PAGE);
    frozen.insert(A, prompt(1));
    frozen.insert(A, prompt(2));
    frozen.insert(A, prompt(1));
    frozen.insert(A, prompt(3));
    assertThat(frozen.match(prompt(2)).matched(A)).isZero();
    assertThat(frozen.match(prompt(1)).matched(A)).isEqualTo(16);
  }

  @Test
  void evictionIsPerBackendAndKeepsPagesOthersHold() {
    index.addBackend(A, 2 * PAGE);
    index.addBackend(B, 10 * PAGE);
    index.insert(A, prompt(1, 2));
    index.insert(B, prompt(1, 2));
    index.insert(A, prompt(3, 4));
    assertThat(index.match(prompt(1, 2)).matchedTokens()).isEqualTo(Map.of(A, 0, B, 32));
    assertThat(index.nodeCount()).isEqualTo(4);
  }

  @Test
  void readdingWithSmallerCapacityEvictsAtOnceTailFirst() {
    index.addBackend(A, 100 * PAGE);
    for (int i = 0; i < 40; i++) {
      index.insert(A, prompt(0, 100 + i, 200 + i));
    }
    index.insert(A, prompt(0, 1, 2, 3));
    index.addBackend(A, 3 * PAGE);
    assertThat(index.sizeTokens(A)).isEqualTo(48);
    assertThat(index.match(prompt(0, 1, 2, 3)).matched(A)).isEqualTo(48);
    assertThat(index.nodeCount()).isEqualTo(3);
    index.addBackend(A, 6 * PAGE); // growing keeps what is held
    assertThat(index.sizeTokens(A)).isEqualTo(48);
    index.insert(A, prompt(0, 1, 2, 3, 4, 5));
    assertThat(index.match(prompt(0, 1, 2, 3, 4, 5)).matched(A)).isEqualTo(96);
    index.addBackend(A, 0);
    assertThat(index.sizeTokens(A)).isZero();
    assertThat(index.nodeCount()).isZero();
  }

  @Test
  void shrinkingCapacityReleasesEntryMemory() {
    index.addBackend(A, 4096 * PAGE);
    for (int i = 0; i < 1000; i++) {
      index.insert(A, prompt(i, i + 1, i + 2, i + 3));
    }
    long full = index.estimatedBytes();
    index.addBackend(A, 16 * PAGE);
    assertThat(index.estimatedBytes()).isLessThan(full);
    index.insert(A, prompt(5000, 5001));
    assertThat(index.match(prompt(5000, 5001)).matched(A)).isEqualTo(32);
  }

  @Test
  void removeBackendDropsItsViewAndKeepsSharedPages() {
    index.addBackend(A, 1000);
    index.addBackend(B, 1000);
    index.insert(A, prompt(1, 2, 3));
    index.insert(B, prompt(1, 2));
    long bytesWithBoth = index.estimatedBytes();
    index.removeBackend(A);
    assertThat(index.sizeTokens(A)).isZero();
    assertThat(index.match(prompt(1, 2, 3)).matchedTokens()).isEqualTo(Map.of(B, 32));
    assertThat(index.nodeCount()).isEqualTo(2);
    assertThat(index.estimatedBytes()).isLessThan(bytesWithBoth);
    index.removeBackend(A); // unknown: no-op
    index.removeBackend(B);
    assertThat(index.nodeCount()).isZero();
    index.addBackend(A, 1000); // re-added: starts empty
    assertThat(index.match(prompt(1, 2, 3)).matchedTokens()).isEqualTo(Map.of(A, 0));
  }

  @Test
  void ordinalsAreReusedAfterRemoval() {
    for (int round = 0; round < 200; round++) {
      BackendId id = BackendId.of("churn-" + round);
      index.addBackend(id, 10 * PAGE);
      index.insert(id, prompt(round, 1));
      index.removeBackend(id);
    }
    index.addBackend(A, 10 * PAGE);
    index.insert(A, prompt(1));
    assertThat(index.match(prompt(1)).matchedTokens()).isEqualTo(Map.of(A, 16));
    assertThat(index.nodeCount()).isEqualTo(1);
  }

  @Test
  void supportsMoreThan64Backends() {
    for (int b = 0; b < 150; b++) {
      index.addBackend(BackendId.of("b" + b), 100 * PAGE);
      index.insert(BackendId.of("b" + b), prompt(1, 2, 1000 + b));
    }
    PrefixMatch match = index.match(prompt(1, 2, 1000 + 130));
    assertThat(match.matchedTokens()).hasSize(150);
    assertThat(match.matched(BackendId.of("b130"))).isEqualTo(48);
    assertThat(match.matched(BackendId.of("b70"))).isEqualTo(32);
    assertThat(match.matched(BackendId.of("b3"))).isEqualTo(32);
    index.removeBackend(BackendId.of("b130"));
    assertThat(index.match(prompt(1, 2, 1000 + 130)).matched(BackendId.of("b129"))).isEqualTo(32);
    assertThat(index.nodeCount()).isEqualTo(2 + 149);
  }

  @Test
  void staleChildHintsFallBackToTheHashMap() {
    index.addBackend(A, 4 * PAGE);
    index.addBackend(B, 4 * PAGE);
    index.insert(A, prompt(1, 2, 3));
    index.insert(B, prompt(1, 4)); // page 1's hint now points at page 4
    assertThat(index.match(prompt(1, 2, 3)).matchedTokens()).isEqualTo(Map.of(A, 48, B, 16));
    index.insert(B, prompt(7, 8, 9)); // evicts page 4; its node id is freed and reused by page 7
    assertThat(index.nodeCount()).isEqualTo(6);
    assertThat(index.match(prompt(1, 2, 3)).matchedTokens()).isEqualTo(Map.of(A, 48, B, 16));
    assertThat(index.match(prompt(1, 4)).matchedTokens()).isEqualTo(Map.of(A, 16, B, 16));
    assertThat(index.match(prompt(7, 8, 9)).matchedTokens()).isEqualTo(Map.of(A, 0, B, 48));
  }

  @Test
  void reinsertAfterOtherPathsMovedSharedPagesKeepsTailFirstOrder() {
    index.addBackend(A, 5 * PAGE);
    index.insert(A, prompt(0, 1, 2));
    index.insert(A, prompt(0, 5)); // moves the shared page 0 away from the first path's entries
    index.insert(A, prompt(0, 1, 2)); // entry guesses miss at page 1, then hit again
    index.insert(A, prompt(6, 7)); // needs one page: page 5, the least recent leaf
    assertThat(index.match(prompt(0, 5)).matched(A)).isEqualTo(16);
    assertThat(index.match(prompt(0, 1, 2)).matched(A)).isEqualTo(48);
  }

  @Test
  void sizeOfUnknownBackendIsZero() {
    assertThat(index.sizeTokens(A)).isZero();
  }

  @Test
  void rejectsBadArguments() {
    assertThatThrownBy(() -> index.insert(A, prompt(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not registered");
    assertThatThrownBy(() -> index.addBackend(A, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("capacityTokens: -1");
    assertThatThrownBy(() -> PrefixIndex.radix(0, () -> 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("pageSizeTokens: 0");
    assertThatThrownBy(() -> PrefixIndex.radix(16, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> index.match((int[]) null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> index.match((PrefixIndex.Prompt) null))
        .isInstanceOf(NullPointerException.class);
    index.addBackend(A, 100);
    assertThatThrownBy(() -> index.insert(A, (int[]) null))
        .isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> index.insert(A, (PrefixIndex.Prompt) null))
        .isInstanceOf(NullPointerException.class);
  }

  @Test
  void preparedPromptsFromElsewhereAreAccepted() {
    index.addBackend(A, 1_000);
    int[] tokens = prompt(1, 2, 3);
    PrefixIndex.Prompt foreign = () -> tokens; // not prepared by any index
    PrefixIndex.Prompt otherPageSize = PrefixIndex.radix(8, () -> 0).prompt(tokens);
    index.insert(A, foreign);
    assertThat(index.match(otherPageSize).matched(A)).isEqualTo(3 * PAGE);
    PrefixIndex.Prompt prepared = index.prompt(withExtra(tokens, 5));
    assertThat(index.match(prepared).matched(A)).isEqualTo(3 * PAGE);
    index.insert(A, prepared);
    assertThat(index.match(prepared).matched(A)).isEqualTo(3 * PAGE);
    assertThat(index.match(prompt(1, 2, 4)).matched(A)).isEqualTo(2 * PAGE);
  }

  @Test
  void estimatedBytesGrowsWithContent() {
    long empty = index.estimatedBytes();
    assertThat(empty).isPositive();
    index.addBackend(A, 100_000);
    for (int i = 0; i < 500; i++) {
      index.insert(A, prompt(i, i + 1));
    }
    assertThat(index.estimatedBytes()).isGreaterThan(empty + 500 * 20);
    assertThat(index.pageSizeTokens()).isEqualTo(PAGE);
  }

  @Test
  void pinnedPromptSurvivesEvictionPressure() {
    index.addBackend(A, 4 * PAGE);
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(1, 2)));
    pin.confirm(); // past its prefill: its pages count against the capacity
    for (int i = 0; i < 10; i++) {
      index.insert(A, prompt(100 + i, 200 + i)); // would have evicted 1,2 by LRU
    }
    assertThat(index.match(prompt(1, 2)).matched(A)).isEqualTo(2 * PAGE);
    assertThat(index.sizeTokens(A)).isEqualTo(4 * PAGE);
    assertThat(index.match(prompt(109, 209)).matched(A)).isEqualTo(2 * PAGE);
    pin.release();
  }

  @Test
  void unpinningMakesPagesEvictableAgainAndTrimsAnOverfullView() {
    index.addBackend(A, 2 * PAGE);
    PrefixIndex.Pin first = index.insertAndPin(A, index.prompt(prompt(1, 2)));
    first.confirm();
    PrefixIndex.Pin second = index.insertAndPin(A, index.prompt(prompt(3, 4)));
    second.confirm();
    // everything pinned: the view briefly exceeds its capacity
    assertThat(index.sizeTokens(A)).isEqualTo(4 * PAGE);
    first.release();
    assertThat(index.sizeTokens(A)).isEqualTo(2 * PAGE);
    assertThat(index.match(prompt(1, 2)).matched(A)).isZero();
    assertThat(index.match(prompt(3, 4)).matched(A)).isEqualTo(2 * PAGE);
    second.release();
    index.insert(A, prompt(5, 6));
    assertThat(index.match(prompt(3, 4)).matched(A)).isZero();
    assertThat(index.match(prompt(5, 6)).matched(A)).isEqualTo(2 * PAGE);
  }

  @Test
  void sharedPagesStayPinnedUntilEveryPinIsReleased() {
    index.addBackend(A, 3 * PAGE);
    PrefixIndex.Pin first = index.insertAndPin(A, index.prompt(prompt(1, 2)));
    PrefixIndex.Pin second = index.insertAndPin(A, index.prompt(prompt(1, 3)));
    first.release();
    index.insert(A, prompt(7, 8, 9)); // page 2 is free to go, page 1 is still held by `second`
    assertThat(index.match(prompt(1, 3)).matched(A)).isEqualTo(2 * PAGE);
    assertThat(index.match(prompt(1, 2)).matched(A)).isEqualTo(PAGE);
    second.release();
  }

  @Test
  void releaseIsIdempotent() {
    index.addBackend(A, 2 * PAGE);
    PrefixIndex.Pin first = index.insertAndPin(A, index.prompt(prompt(1, 2)));
    first.release();
    PrefixIndex.Pin second = index.insertAndPin(A, index.prompt(prompt(1, 2)));
    first.release(); // must not drop the pins `second` holds
    index.insert(A, prompt(5, 6));
    assertThat(index.match(prompt(1, 2)).matched(A)).isEqualTo(2 * PAGE);
    second.release();
    second.release();
    index.insert(A, prompt(5, 6));
    assertThat(index.match(prompt(1, 2)).matched(A)).isZero();
  }

  @Test
  void abandonTakesBackOnlyThePagesItsInsertAdded() {
    index.addBackend(A, 16 * PAGE);
    index.insert(A, prompt(1, 2));
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(1, 2, 3, 4)));
    assertThat(index.match(prompt(1, 2, 3, 4)).matched(A)).isEqualTo(4 * PAGE);
    pin.abandon();
    assertThat(index.match(prompt(1, 2, 3, 4)).matched(A)).as("pages 3 and 4 were new").isEqualTo(2 * PAGE);
    assertThat(index.sizeTokens(A)).isEqualTo(2 * PAGE);
    pin.release(); // ended already: no effect
    assertThat(index.sizeTokens(A)).isEqualTo(2 * PAGE);
    index.checkInvariants();
  }

  @Test
  void pinsEndCorrectlyAfterACapacityCutRenumberedTheirView() {
    // A pin keeps its pages' entry ids; a capacity cut that reallocates the view renumbers them.
    index.addBackend(A, 4096 * PAGE);
    for (int i = 0; i < 1000; i++) {
      index.insert(A, prompt(5000 + i));
    }
    PrefixIndex.Pin released = index.insertAndPin(A, index.prompt(prompt(1, 2, 3)));
    PrefixIndex.Pin abandoned = index.insertAndPin(A, index.prompt(prompt(4, 5)));
    long before = index.estimatedBytes();
    index.addBackend(A, 16 * PAGE);
    assertThat(index.estimatedBytes()).as("the cut reallocated the entries").isLessThan(before);
    abandoned.abandon();
    assertThat(index.match(prompt(4, 5)).matched(A)).as("its insert added both pages").isZero();
    released.release();
    assertThat(index.match(prompt(1, 2, 3)).matched(A)).isEqualTo(3 * PAGE);
    // the release made 1, 2, 3 the most recent pages: 13 more fill the view, the 14th evicts page 3
    for (int i = 0; i < 13; i++) {
      index.insert(A, prompt(9000 + i));
    }
    assertThat(index.match(prompt(1, 2, 3)).matched(A)).isEqualTo(3 * PAGE);
    index.insert(A, prompt(9100));
    assertThat(index.match(prompt(1, 2, 3)).matched(A)).isEqualTo(2 * PAGE);
    index.checkInvariants();
  }

  @Test
  void abandonKeepsPagesAnotherRequestUsedOrExtendedSince() {
    index.addBackend(A, 16 * PAGE);
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(1, 2, 3)));
    index.insert(A, prompt(1, 2, 3, 5)); // passes page 3 and adds a page under it
    pin.abandon();
    assertThat(index.match(prompt(1, 2, 3, 5)).matched(A)).isEqualTo(4 * PAGE);

    PrefixIndex.Pin first = index.insertAndPin(A, index.prompt(prompt(7, 8)));
    PrefixIndex.Pin second = index.insertAndPin(A, index.prompt(prompt(7, 8)));
    first.abandon(); // page 8 is still pinned by `second`
    assertThat(index.match(prompt(7, 8)).matched(A)).isEqualTo(2 * PAGE);
    second.abandon(); // added nothing itself
    assertThat(index.match(prompt(7, 8)).matched(A)).isEqualTo(2 * PAGE);
    index.checkInvariants();
  }

  @Test
  void anAbandonedOversizedPromptLeavesTheViewAsItWas() {
    // an engine rejects a prompt longer than it takes; the view must not have traded its pages for it
    index.addBackend(A, 4 * PAGE);
    index.insert(A, prompt(1, 2));
    index.insert(A, prompt(3, 4));
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(10, 11, 12, 13, 14, 15)));
    assertThat(index.match(prompt(1, 2)).matched(A)).as("provisional pages evict nothing").isEqualTo(2 * PAGE);
    pin.abandon();
    assertThat(index.sizeTokens(A)).isEqualTo(4 * PAGE);
    assertThat(index.match(prompt(1, 2)).matched(A)).isEqualTo(2 * PAGE);
    assertThat(index.match(prompt(3, 4)).matched(A)).isEqualTo(2 * PAGE);
    assertThat(index.match(prompt(10, 11)).matched(A)).isZero();
    index.removeBackend(A);
    index.addBackend(A, 4 * PAGE);
    index.insert(A, prompt(1, 2));
    PrefixIndex.Pin kept = index.insertAndPin(A, index.prompt(prompt(1, 2, 20)));
    kept.abandon();
    assertThat(index.match(prompt(1, 2)).matched(A)).isEqualTo(2 * PAGE);
    assertThat(index.match(prompt(1, 2, 20)).matched(A)).isEqualTo(2 * PAGE);
    index.checkInvariants();
  }

  @Test
  void forgetEmptiesOneViewAndKeepsTheBackendAndOthers() {
    index.addBackend(A, 4 * PAGE);
    index.addBackend(B, 4 * PAGE);
    index.insert(A, prompt(1, 2));
    index.insert(B, prompt(1, 2));
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(3, 4)));
    index.forget(A);
    assertThat(index.sizeTokens(A)).isZero();
    assertThat(index.match(prompt(1, 2)).matched(B)).isEqualTo(2 * PAGE);
    pin.release(); // taken before: no effect on the fresh view
    assertThat(index.sizeTokens(A)).isZero();
    index.insert(A, prompt(5, 6, 7, 8, 9)); // same capacity as before: truncated to 4 pages
    assertThat(index.sizeTokens(A)).isEqualTo(4 * PAGE);
    index.forget(BackendId.of("never-added"));
    index.checkInvariants();
  }

  @Test
  void aHugeCapacityIsClampedNotOverflowed() {
    index.addBackend(A, Long.MAX_VALUE);
    index.insert(A, prompt(1, 2));
    index.addBackend(A, 1L << 40); // re-adding re-checks the entry arrays against the capacity
    assertThat(index.match(prompt(1, 2)).matched(A)).isEqualTo(2 * PAGE);
    index.checkInvariants();
  }

  @Test
  void confirmingMakesANewPromptsPagesCountAndEvict() {
    index.addBackend(A, 4 * PAGE);
    index.insert(A, prompt(1, 2));
    index.insert(A, prompt(3, 4));
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(5, 6)));
    assertThat(index.sizeTokens(A)).as("provisional: above capacity").isEqualTo(6 * PAGE);
    pin.confirm();
    assertThat(index.sizeTokens(A)).isEqualTo(4 * PAGE);
    assertThat(index.match(prompt(1, 2)).matched(A)).as("least recent, evicted").isZero();
    assertThat(index.match(prompt(5, 6)).matched(A)).isEqualTo(2 * PAGE);
    pin.confirm(); // once only
    pin.release();
    pin.confirm(); // after the end: nothing
    assertThat(index.sizeTokens(A)).isEqualTo(4 * PAGE);
    index.checkInvariants();
  }

  @Test
  void removeBackendDropsItsPins() {
    index.addBackend(A, 2 * PAGE);
    PrefixIndex.Pin pin = index.insertAndPin(A, index.prompt(prompt(1, 2)));
    index.removeBackend(A);
    index.addBackend(A, 2 * PAGE);
    PrefixIndex.Pin again = index.insertAndPin(A, index.prompt(prompt(1, 2)));
    pin.release(); // belongs to the removed view: no effect on the new one
    index.insert(A, prompt(5, 6));
    assertThat(index.match(prompt(1, 2)).matched(A)).isEqualTo(2 * PAGE);
    again.release();
  }

  /** {@code pages} pages labelled {@code first}, {@code first + 1}, ... */
  private static int[] pages(int first, int pages) {
    return prompt(IntStream.range(first, first + pages).toArray());
  }

  @Test
  void aPinnedInsertPastCapacityGrewTheViewOnePageAtATime() {
    // Issue 11 C1: a second long prompt, pinned into a full view, took the view past its capacity,
    // and its arrays then grew by one slot per page (quadratic; 8 s on the event loop).
    int capacity = 4096;
    index.delegate.addBackend(A, (long) capacity * PAGE); // unchecked: checks are O(view) each
    index.delegate.insert(A, pages(1_000_000, capacity));
    PrefixIndex.Pin pin = index.delegate.insertAndPin(A, index.prompt(pages(2_000_000, capacity)));
    assertThat(index.sizeTokens(A)).isEqualTo(2L * capacity * PAGE); // provisional: nothing evicted
    assertThat(index.delegate.entryGrowths(A))
        .as("entry arrays reallocated (doubling: about log2(2 x %d / 16))", capacity)
        .isLessThanOrEqualTo(12);
    index.checkInvariants();
    pin.release();
    assertThat(index.sizeTokens(A)).isEqualTo((long) capacity * PAGE);
    index.checkInvariants();
  }

  @Test
  void pinnedPromptsBeyondTheEnginesKvGrewTheViewWithoutBound() {
    // Issue 11 C1: pinned in-flight prompts beyond the engine's KV (what overload does) were all
    // held, so one view, and the index's memory, grew with the number of prompts in flight.
    index.addBackend(A, 8 * PAGE);
    PrefixIndex.Pin[] pins = new PrefixIndex.Pin[5];
    for (int i = 0; i < pins.length; i++) {
      pins[i] = index.insertAndPin(A, index.prompt(pages(100 * (i + 1), 8)));
    }
    assertThat(index.sizeTokens(A)).as("at most twice the capacity").isEqualTo(16L * PAGE);
    assertThat(index.delegate.nodeCount()).isEqualTo(16);
    assertThat(index.match(pages(100, 8)).matched(A)).isEqualTo(8 * PAGE);
    assertThat(index.match(pages(200, 8)).matched(A)).isEqualTo(8 * PAGE);
    assertThat(index.match(pages(300, 8)).matched(A)).as("indexed no deeper than the limit").isZero();
    for (PrefixIndex.Pin pin : pins) {
      pin.release();
    }
    assertThat(index.sizeTokens(A)).isEqualTo(8L * PAGE);
    // a plain insert into a view full of pinned pages also stops at the limit
    PrefixIndex.Pin first = index.insertAndPin(A, index.prompt(pages(400, 8)));
    PrefixIndex.Pin second = index.insertAndPin(A, index.prompt(pages(500, 8)));
    index.insert(A, pages(600, 8));
    assertThat(index.sizeTokens(A)).isEqualTo(16L * PAGE);
    assertThat(index.match(pages(600, 8)).matched(A)).isZero();
    first.release();
    second.release();
    assertThat(index.sizeTokens(A)).isEqualTo(8L * PAGE);
  }
}
