package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.PrefixedTokens;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * A prompt that takes its first pages' hashes from an earlier prompt ({@link
 * PrefixIndex#prompt(SegmentedTokens, long, PageHashes, int)}, fed by the tokenizer's message-prefix
 * cache, the earlier turn's token arrays shared)
 * hashes every page bit for bit as a prompt hashed from scratch: over random multi-turn chats
 * (extended, branched, repeated, with custom and missing roles), page sizes whose pages end inside
 * a message, and namespaces.
 */
class MessagePrefixHashEquivalenceTest {
  private static final int[] PAGE_SIZES = {1, 3, 16, 17, 64};
  private static final long[] NAMESPACES = {0L, PrefixIndex.namespace("adapter-a"), -7L};
  private static final String[] ROLES = {"system", "user", "assistant", "tool", "critic", null};
  private static final String[] WORDS = {"the", "cache", " of", "café", "😀", "\n", "kv", "route",
      "<|im_end|>", "pages", "1234", " ", "tail"};

  private static String text(SplittableRandom random) {
    StringBuilder sb = new StringBuilder();
    int n = random.nextInt(0, 60);
    for (int i = 0; i < n; i++) {
      sb.append(WORDS[random.nextInt(WORDS.length)]);
    }
    return sb.toString();
  }

  private static RequestView chat(List<PromptSegment> messages) {
    return new RequestView(Endpoint.CHAT_COMPLETIONS, "m", null, List.copyOf(messages), false, -1);
  }

  private static long[] fresh(int[] tokens, int pageSize, long namespace) {
    HashedPrompt p = new HashedPrompt(tokens, pageSize, namespace);
    long[] h = new long[p.pages()];
    for (int d = 0; d < h.length; d++) {
      h[d] = p.hash(d);
    }
    return h;
  }

  @Test
  void pageHashesFromAnEarlierTurnAreThoseHashedFromScratch() {
    SplittableRandom random = new SplittableRandom(18);
    PromptTokenizer plain = PromptTokenizer.create(Tokenizer.defaultTokenizer(), 0);
    int prompts = 0;
    int reused = 0;
    int segmented = 0;
    long reusedPages = 0;
    for (int pageSize : PAGE_SIZES) {
      for (long namespace : NAMESPACES) {
        PromptTokenizer cached = PromptTokenizer.create(Tokenizer.defaultTokenizer());
        RadixPrefixIndex index = new RadixPrefixIndex(pageSize, () -> 0L);
        List<List<PromptSegment>> sessions = new ArrayList<>();
        for (int turn = 0; turn < 200; turn++) {
          List<PromptSegment> messages;
          int pick = sessions.isEmpty() ? -1 : random.nextInt(sessions.size() + 2) - 2;
          if (pick < 0) { // a new conversation
            messages = new ArrayList<>();
            if (random.nextBoolean()) {
              messages.add(PromptSegment.text("system", "You are kvroute's test."));
            }
            sessions.add(messages);
          } else {
            messages = sessions.get(pick);
          }
          int op = random.nextInt(10);
          if (op == 0 && messages.size() > 1) { // a branch: the last message replaced
            messages.set(messages.size() - 1, PromptSegment.text("user", text(random)));
          } else if (op != 1 || messages.isEmpty()) { // op 1 repeats the same messages
            int added = 1 + random.nextInt(3);
            for (int i = 0; i < added; i++) {
              messages.add(PromptSegment.text(ROLES[random.nextInt(ROLES.length)], text(random)));
            }
          }
          RequestView view = chat(messages);
          PrefixedTokens t = cached.tokenizePrefixed(view);
          int[] expected = plain.tokenize(view);
          PageHashes known = t.knownPageHashes();
          // as the router does: the earlier turn's arrays shared, pages hashed where they lie (the
          // flat array is asked for only after the hashing, which must not need it)
          HashedPrompt p = (HashedPrompt) index.prompt(t.segmented(), namespace, known, t.sharedTokens());
          if (t.segmented().segments() > 1) {
            segmented++;
          }
          if (t.sharedTokens() > 0 && known.fits(pageSize, namespace)) {
            reused++;
            reusedPages += Math.min(known.pages(), t.sharedTokens() / pageSize);
          }
          long[] want = fresh(expected, pageSize, namespace);
          assertThat(p.pages()).isEqualTo(want.length);
          // half the prompts hashed only partly (a match that stopped early) before they are kept
          int upTo = random.nextBoolean() ? want.length : random.nextInt(want.length + 1);
          for (int d = 0; d < upTo; d++) {
            assertThat(p.hash(d)).as("page %d of %d, page size %d", d, want.length, pageSize)
                .isEqualTo(want[d]);
          }
          assertThat(t.tokens()).as("tokens of turn %d", turn).containsExactly(expected);
          assertThat(t.segmented().length()).isEqualTo(expected.length);
          t.remember(p.pageHashes());
          prompts++;
        }
      }
    }
    // the cache did its work: most turns extend an earlier one and take its pages
    assertThat(reused).isGreaterThan(prompts / 2);
    assertThat(reusedPages).isGreaterThan(prompts);
    assertThat(segmented).isGreaterThan(prompts / 2);
  }

  @Test
  void hashesOfAnotherPageSizeOrNamespaceAreIgnored() {
    int[] tokens = new SplittableRandom(3).ints(200, 0, 50_000).toArray();
    HashedPrompt a = new HashedPrompt(tokens, 16, 0L);
    a.hash(a.pages() - 1);
    RadixPrefixIndex at17 = new RadixPrefixIndex(17, () -> 0L);
    RadixPrefixIndex at16 = new RadixPrefixIndex(16, () -> 0L);
    long[] want17 = fresh(tokens, 17, 0L);
    long[] want16ns = fresh(tokens, 16, 5L);
    HashedPrompt b = (HashedPrompt) at17.prompt(tokens, 0L, a.pageHashes(), tokens.length);
    HashedPrompt c = (HashedPrompt) at16.prompt(tokens, 5L, a.pageHashes(), tokens.length);
    for (int d = 0; d < want17.length; d++) {
      assertThat(b.hash(d)).isEqualTo(want17[d]);
    }
    for (int d = 0; d < want16ns.length; d++) {
      assertThat(c.hash(d)).isEqualTo(want16ns[d]);
    }
  }

  @Test
  void aPromptShorterThanTheKnownOneTakesOnlyItsOwnPages() {
    int[] tokens = new SplittableRandom(4).ints(100, 0, 50_000).toArray();
    HashedPrompt a = new HashedPrompt(tokens, 8, 0L);
    a.hash(a.pages() - 1);
    int[] shorter = Arrays.copyOf(tokens, 37);
    RadixPrefixIndex index = new RadixPrefixIndex(8, () -> 0L);
    HashedPrompt b = (HashedPrompt) index.prompt(shorter, 0L, a.pageHashes(), shorter.length);
    long[] want = fresh(shorter, 8, 0L);
    assertThat(b.pages()).isEqualTo(4);
    for (int d = 0; d < want.length; d++) {
      assertThat(b.hash(d)).isEqualTo(want[d]);
    }
  }

  @Test
  void sharedTokensOutsideThePromptAreRefused() {
    RadixPrefixIndex index = new RadixPrefixIndex(8, () -> 0L);
    assertThatThrownBy(() -> index.prompt(new int[4], 0L, PageHashes.NONE, 5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sharedTokens: 5 (expected: 0 to 4");
  }
}
