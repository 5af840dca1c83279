package dev.kvroute.core.index;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.BackendId;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** One index, several (model, adapter) namespaces: pages of one never match another. */
class PrefixIndexNamespaceTest {
  private static final int PAGE = 16;
  private static final BackendId A = BackendId.of("a");
  private static final BackendId B = BackendId.of("b");
  private final AtomicLong clock = new AtomicLong();
  private final CheckedPrefixIndex index = new CheckedPrefixIndex(PAGE, clock::incrementAndGet);

  private static final long BASE = PrefixIndex.namespace("model-b", null);
  private static final long X = PrefixIndex.namespace("model-b", "adapter-x");
  private static final long Y = PrefixIndex.namespace("model-b", "adapter-y");

  private static int[] tokens(int n) {
    return IntStream.range(0, n).map(i -> i * 7 + 3).toArray();
  }

  @Test
  void namespacesAreDistinctNonZeroAndTheDefaultIsZero() {
    assertThat(PrefixIndex.namespace(null, null)).isZero();
    assertThat(new long[] {BASE, X, Y}).doesNotContain(0L).doesNotHaveDuplicates();
    assertThat(PrefixIndex.namespace("model-b", "adapter-x")).isEqualTo(X);
    // the separator keeps ("ab", "c") apart from ("a", "bc")
    assertThat(PrefixIndex.namespace("ab", "c")).isNotEqualTo(PrefixIndex.namespace("a", "bc"));
  }

  @Test
  void pagesCachedUnderAdapterXAreNeverHitsForAdapterYTheBaseOrTheDefault() {
    index.addBackend(A, 10_000);
    int[] prompt = tokens(160);
    index.insert(A, index.prompt(prompt, X));
    assertThat(index.match(index.prompt(prompt, X)).matched(A)).isEqualTo(160);
    assertThat(index.match(index.prompt(prompt, Y)).matched(A)).isZero();
    assertThat(index.match(index.prompt(prompt, BASE)).matched(A)).isZero();
    assertThat(index.match(prompt).matched(A)).isZero();
    index.checkInvariants();
  }

  @Test
  void aPromptPreparedElsewhereKeepsItsNamespace() {
    index.addBackend(A, 10_000);
    int[] prompt = tokens(64);
    PrefixIndex.Prompt foreign = new PrefixIndex.Prompt() {
      @Override
      public int[] tokens() {
        return prompt;
      }

      @Override
      public long namespace() {
        return X;
      }
    };
    index.insert(A, foreign);
    assertThat(index.match(index.prompt(prompt, X)).matched(A)).isEqualTo(64);
    assertThat(index.match(prompt).matched(A)).isZero();
  }

  @Test
  void namespacesShareOneCapacityPerBackend() {
    index.addBackend(A, 64); // four pages
    index.addBackend(B, 1_000);
    int[] prompt = tokens(64);
    index.insert(A, index.prompt(prompt, X));
    index.insert(A, index.prompt(prompt, Y)); // evicts X's pages: one KV pool
    assertThat(index.sizeTokens(A)).isEqualTo(64);
    assertThat(index.match(index.prompt(prompt, Y)).matched(A)).isEqualTo(64);
    assertThat(index.match(index.prompt(prompt, X)).matched(A)).isZero();
    index.insert(B, index.prompt(prompt, X));
    assertThat(index.match(index.prompt(prompt, X)).matched(B)).isEqualTo(64);
    index.checkInvariants();
  }
}
