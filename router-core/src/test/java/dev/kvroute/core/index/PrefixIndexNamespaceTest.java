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

  private static final long X = PrefixIndex.namespace("adapter-x");
  private static final long Y = PrefixIndex.namespace("adapter-y");

  private static int[] tokens(int n) {
    return IntStream.range(0, n).map(i -> i * 7 + 3).toArray();
  }

  @Test
  void adapterNamespacesAreDistinctNonZeroAndTheBaseModelsIsTheDefault() {
    // vLLM's block hashes carry the adapter, not the model: base models share the default namespace
    assertThat(PrefixIndex.namespace(null)).isZero();
    assertThat(new long[] {X, Y}).doesNotContain(0L).doesNotHaveDuplicates();
    assertThat(PrefixIndex.namespace("adapter-x")).isEqualTo(X);
  }

  @Test
  void eventFedPagesOfAnAdapterRootWhereTheRoutersPromptsOfThatAdapterDo() {
    // the regression: the precise view rooted adapters (and named models) elsewhere than prompts
    assertThat(PreciseView.root("adapter-x")).isEqualTo(PageHash.root(X));
    assertThat(PreciseView.root(null)).isEqualTo(PageHash.root(0)).isEqualTo(PageHash.ROOT);
  }

  @Test
  void preciseIndexMatchesAnAdaptersPromptAgainstItsEventFedPages() {
    // the regression: the precise index chained every prompt from the default root, so an adapter's
    // prompt never met the pages its engine announced under lora_name (multi-model: 36% against 42%)
    java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1);
    KvEventIndex precise = KvEventIndex.create(PrefixIndex.radix(PAGE, now::get), now::get,
        new KvEventIndex.Settings(java.time.Duration.ofSeconds(2), java.time.Duration.ofSeconds(30)));
    precise.addBackend(A, 10_000);
    precise.enableEvents(A);
    int[] prompt = tokens(64);
    dev.kvroute.core.kvevents.KvEvent.BlockStored stored = new dev.kvroute.core.kvevents.KvEvent.BlockStored(
        new long[] {11, 12, 13, 14}, java.util.OptionalLong.empty(), prompt, PAGE, null, "adapter-x", 0);
    precise.apply(A, new dev.kvroute.core.kvevents.KvEventBatch(1.0, java.util.List.of(stored), 0), 2);
    assertThat(precise.match(precise.prompt(prompt, X)).matched(A)).isEqualTo(64);
    assertThat(precise.match(precise.prompt(prompt, Y)).matched(A)).isZero();
    assertThat(precise.match(prompt).matched(A)).isZero();
    // what the router speculates for one adapter is no hit for another either
    int[] other = IntStream.range(0, 96).map(i -> i * 11 + 5).toArray();
    precise.insert(A, precise.prompt(other, Y));
    assertThat(precise.match(precise.prompt(other, Y)).matched(A)).isEqualTo(96);
    assertThat(precise.match(precise.prompt(other, X)).matched(A)).isZero();
    assertThat(precise.match(other).matched(A)).isZero();
    precise.checkInvariants();
  }

  @Test
  void pagesCachedUnderAdapterXAreNeverHitsForAdapterYOrTheBaseModel() {
    index.addBackend(A, 10_000);
    int[] prompt = tokens(160);
    index.insert(A, index.prompt(prompt, X));
    assertThat(index.match(index.prompt(prompt, X)).matched(A)).isEqualTo(160);
    assertThat(index.match(index.prompt(prompt, Y)).matched(A)).isZero();
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
