package dev.kvroute.engine.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.engine.model.EngineConfig.SchedulerKind;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The FCFS-prefill engine in exact model time. Cost: 1 ms per uncached prompt token plus 20 ms per
 * request; 10 ms between output tokens. Block size 4.
 */
class FcfsPrefillEngineTest {
  static final long MS = 1_000_000L;

  static EngineConfig config(int blocks) {
    return EngineConfig.builder()
        .scheduler(SchedulerKind.FCFS_PREFILL)
        .blockSizeTokens(4)
        .numGpuBlocks(blocks)
        .maxModelLen(blocks * 4)
        .cost(CostModel.linear(1000, 0.020, 100))
        .build();
  }

  /** Tokens {@code base, base+1, ...}: distinct bases give distinct prompts. */
  static int[] tokens(int base, int n) {
    return IntStream.range(base, base + n).toArray();
  }

  static int[] concat(int[]... parts) {
    return java.util.Arrays.stream(parts).flatMapToInt(java.util.Arrays::stream).toArray();
  }

  final Recorder rec = new Recorder();

  void runToIdle(EngineModel engine) {
    while (engine.nextEventNanos() != Long.MAX_VALUE) {
      engine.advanceTo(engine.nextEventNanos(), rec);
      ((AbstractEngine) engine).checkInvariants();
    }
  }

  void submitAt(EngineModel engine, EngineRequest r, long now) {
    engine.advanceTo(now, rec);
    engine.submit(r, now);
    ((AbstractEngine) engine).checkInvariants();
  }

  @Test
  void samePromptTwiceReportsFullBlockPrefixAndPrefillsOnlyTheRest() {
    EngineModel engine = EngineModel.create(config(64));
    int[] prompt = tokens(1000, 10);
    submitAt(engine, EngineRequest.of(1, prompt, tokens(5000, 3)), 0);
    runToIdle(engine);
    assertThat(rec.first.get(1L)).isEqualTo(new Recorder.First(30 * MS, 0, 30 * MS, 0));
    assertThat(rec.tokenTimes.get(1L)).containsExactly(30 * MS, 40 * MS, 50 * MS);
    assertThat(rec.reason.get(1L)).isEqualTo("length");

    // 10 prompt tokens: two full blocks are cached; the partial third block is recomputed.
    assertThat(engine.cachedPrefixTokens(prompt)).isEqualTo(8);
    submitAt(engine, EngineRequest.of(2, prompt, tokens(6000, 1)), 100 * MS);
    runToIdle(engine);
    assertThat(rec.first.get(2L)).isEqualTo(new Recorder.First(122 * MS, 8, 22 * MS, 0));
    assertThat(rec.finishedAt.get(2L)).isEqualTo(122 * MS);

    EngineStats stats = engine.stats();
    assertThat(stats.prefixQueryTokens()).isEqualTo(20);
    assertThat(stats.prefixHitTokens()).isEqualTo(8);
    assertThat(stats.promptTokens()).isEqualTo(20);
    assertThat(stats.generationTokens()).isEqualTo(4);
    assertThat(stats.prefillNanos()).isEqualTo(52 * MS);
    assertThat(stats.usedBlocks()).isZero();
  }

  @Test
  void fullyCachedPromptStillRecomputesItsLastBlock() {
    EngineModel engine = EngineModel.create(config(64));
    int[] prompt = tokens(1000, 16);
    submitAt(engine, EngineRequest.of(1, prompt, tokens(5000, 1)), 0);
    runToIdle(engine);
    // floor((16 - 1) / 4) * 4 = 12, vLLM's cap: the last token is always computed.
    assertThat(engine.cachedPrefixTokens(prompt)).isEqualTo(12);
    submitAt(engine, EngineRequest.of(2, prompt, tokens(5000, 1)), 50 * MS);
    runToIdle(engine);
    assertThat(rec.first.get(2L).cachedTokens()).isEqualTo(12);
    assertThat(rec.first.get(2L).prefillNanos()).isEqualTo(24 * MS);
  }

  @Test
  void generatedTokensAreCachedForTheNextTurn() {
    EngineModel engine = EngineModel.create(config(64));
    int[] turn1 = tokens(1000, 8);
    int[] reply = tokens(5000, 5);
    submitAt(engine, EngineRequest.of(1, turn1, reply), 0);
    runToIdle(engine);
    // KV exists for the prompt and every output token but the last: 8 + 5 - 1 = 12 tokens, 3 blocks.
    int[] turn2 = concat(turn1, reply, tokens(2000, 4));
    assertThat(engine.cachedPrefixTokens(turn2)).isEqualTo(12);
    submitAt(engine, EngineRequest.of(2, turn2, tokens(6000, 1)), 200 * MS);
    runToIdle(engine);
    assertThat(rec.first.get(2L).cachedTokens()).isEqualTo(12);
    assertThat(rec.first.get(2L).prefillNanos()).isEqualTo((20 + 17 - 12) * MS);
    assertThat(rec.tokenIds.get(1L)).containsExactly(5000, 5001, 5002, 5003, 5004);
  }

  @Test
  void secondRequestQueuesBehindTheFirstPrefill() {
    EngineModel engine = EngineModel.create(config(64));
    submitAt(engine, EngineRequest.of(1, tokens(1000, 100), tokens(5000, 2)), 0);
    submitAt(engine, EngineRequest.of(2, tokens(2000, 50), tokens(6000, 2)), 5 * MS);
    engine.advanceTo(5 * MS, rec);
    assertThat(engine.stats().running()).isEqualTo(1);
    assertThat(engine.stats().waiting()).isEqualTo(1);
    runToIdle(engine);
    assertThat(rec.first.get(1L)).isEqualTo(new Recorder.First(120 * MS, 0, 120 * MS, 0));
    // Request 2 starts when request 1's prefill ends, at 120 ms: 115 ms queued, then 70 ms of prefill.
    assertThat(rec.first.get(2L)).isEqualTo(new Recorder.First(190 * MS, 0, 70 * MS, 115 * MS));
    // Decode does not occupy the prefill queue: request 1 decodes while request 2 prefills.
    assertThat(rec.tokenTimes.get(1L)).containsExactly(120 * MS, 130 * MS);
    assertThat(rec.tokenTimes.get(2L)).containsExactly(190 * MS, 200 * MS);
  }

  @Test
  void requestsSubmittedAtOneInstantStartInSubmissionOrder() {
    EngineModel engine = EngineModel.create(config(64));
    engine.submit(EngineRequest.of(1, tokens(1000, 10), tokens(5000, 1)), 0);
    engine.submit(EngineRequest.of(2, tokens(2000, 10), tokens(5000, 1)), 0);
    assertThat(engine.nextEventNanos()).isZero();
    runToIdle(engine);
    assertThat(rec.finishedAt.get(1L)).isEqualTo(30 * MS);
    assertThat(rec.finishedAt.get(2L)).isEqualTo(60 * MS);
  }

  @Test
  void evictsLeastRecentlyUsedBlocksLeafFirst() {
    // 7 blocks. Each request: 9 prompt tokens + 1 output = 3 blocks while running, 2 cached after.
    AbstractEngine engine = (AbstractEngine) EngineModel.create(config(7));
    int[] a = tokens(1000, 9);
    int[] b = tokens(2000, 9);
    int[] c = tokens(3000, 9);
    long t = 0;
    for (int[] p : new int[][] {a, b, c}) {
      submitAt(engine, EngineRequest.of(t, p, tokens(9000, 1)), t * 100 * MS);
      runToIdle(engine);
      t++;
    }
    long[] ha = BlockHashes.of(a, 4);
    long[] hb = BlockHashes.of(b, 4);
    long[] hc = BlockHashes.of(c, 4);
    assertThat(engine.pool.evictionOrder()).containsExactly(ha[1], ha[0], hb[1], hb[0], hc[1], hc[0]);

    // Reusing b makes it most recently used.
    submitAt(engine, EngineRequest.of(10, b, tokens(9000, 1)), 1000 * MS);
    runToIdle(engine);
    assertThat(rec.first.get(10L).cachedTokens()).isEqualTo(8);
    assertThat(engine.pool.evictionOrder()).containsExactly(ha[1], ha[0], hc[1], hc[0], hb[1], hb[0]);
    assertThat(engine.stats().evictedBlocks()).isZero();

    // A new 3-block request with 1 free block evicts the two least recent: a's blocks.
    submitAt(engine, EngineRequest.of(11, tokens(4000, 9), tokens(9000, 1)), 2000 * MS);
    runToIdle(engine);
    assertThat(engine.stats().evictedBlocks()).isEqualTo(2);
    assertThat(engine.cachedPrefixTokens(a)).isZero();
    assertThat(engine.cachedPrefixTokens(b)).isEqualTo(8);
    assertThat(engine.cachedPrefixTokens(c)).isEqualTo(8);

    // A 2-block request evicts one block: c's tail goes, its first block survives.
    submitAt(engine, EngineRequest.of(12, tokens(5000, 5), tokens(9000, 1)), 3000 * MS);
    runToIdle(engine);
    assertThat(engine.stats().evictedBlocks()).isEqualTo(3);
    assertThat(engine.cachedPrefixTokens(c)).isEqualTo(4);
    assertThat(engine.cachedPrefixTokens(b)).isEqualTo(8);
  }

  @Test
  void cachedPrefixTokensDoesNotTouchLruOrder() {
    AbstractEngine engine = (AbstractEngine) EngineModel.create(config(16));
    int[] a = tokens(1000, 9);
    int[] b = tokens(2000, 9);
    submitAt(engine, EngineRequest.of(1, a, tokens(9000, 1)), 0);
    runToIdle(engine);
    submitAt(engine, EngineRequest.of(2, b, tokens(9000, 1)), 100 * MS);
    runToIdle(engine);
    long[] before = engine.pool.evictionOrder();
    assertThat(engine.cachedPrefixTokens(a)).isEqualTo(8);
    assertThat(engine.pool.evictionOrder()).containsExactly(before);
  }

  @Test
  void blocksInUseAreNeverEvictedAndTheNextRequestWaitsForThem() {
    // 4 blocks. Request 1 holds ceil((8 + 5 - 1) / 4) = 3 blocks while it decodes.
    EngineModel engine = EngineModel.create(config(4));
    int[] p1 = tokens(1000, 8);
    submitAt(engine, EngineRequest.of(1, p1, tokens(5000, 5)), 0);
    submitAt(engine, EngineRequest.of(2, tokens(2000, 8), tokens(6000, 1)), 1 * MS);
    engine.advanceTo(40 * MS, rec);
    // Request 2 needs 2 blocks, 1 is free, the rest are held: it waits at the head of the queue.
    assertThat(engine.stats().usedBlocks()).isEqualTo(3);
    assertThat(engine.stats().waiting()).isEqualTo(1);
    assertThat(engine.cachedPrefixTokens(p1)).isEqualTo(4);
    runToIdle(engine);
    // Request 1: first token at 28 ms, last at 68 ms; request 2 starts then: 28 ms of prefill.
    assertThat(rec.finishedAt.get(1L)).isEqualTo(68 * MS);
    assertThat(rec.first.get(2L)).isEqualTo(new Recorder.First(96 * MS, 0, 28 * MS, 67 * MS));
    assertThat(engine.stats().evictedBlocks()).isEqualTo(1);
  }

  @Test
  void abortReleasesBlocksAndKeepsComputedPrefix() {
    EngineModel engine = EngineModel.create(config(64));
    int[] prompt = tokens(1000, 9);
    submitAt(engine, EngineRequest.of(1, prompt, tokens(5000, 100)), 0);
    engine.advanceTo(50 * MS, rec);
    assertThat(engine.stats().usedBlocks()).isEqualTo(27);
    assertThat(engine.abort(1, 55 * MS, rec)).isTrue();
    ((AbstractEngine) engine).checkInvariants();
    assertThat(rec.reason.get(1L)).isEqualTo("abort");
    assertThat(rec.finishedAt.get(1L)).isEqualTo(55 * MS);
    assertThat(rec.tokenTimes.get(1L)).containsExactly(29 * MS, 39 * MS, 49 * MS);
    assertThat(engine.stats().usedBlocks()).isZero();
    assertThat(engine.stats().running()).isZero();
    assertThat(engine.nextEventNanos()).isEqualTo(Long.MAX_VALUE);
    assertThat(engine.cachedPrefixTokens(prompt)).isEqualTo(8);
    assertThat(engine.abort(1, 60 * MS, rec)).isFalse();
  }

  @Test
  void abortDuringPrefillStartsTheNextRequestAtOnce() {
    EngineModel engine = EngineModel.create(config(64));
    submitAt(engine, EngineRequest.of(1, tokens(1000, 100), tokens(5000, 2)), 0);
    submitAt(engine, EngineRequest.of(2, tokens(2000, 10), tokens(6000, 1)), 0);
    engine.abort(1, 50 * MS, rec);
    runToIdle(engine);
    assertThat(rec.first.get(2L)).isEqualTo(new Recorder.First(80 * MS, 0, 30 * MS, 50 * MS));
    assertThat(engine.stats().prefillNanos()).isEqualTo(80 * MS);
  }

  @Test
  void stopFinishReasonIsReported() {
    EngineModel engine = EngineModel.create(config(64));
    submitAt(engine, new EngineRequest(1, tokens(1000, 4), tokens(5000, 2), "stop"), 0);
    runToIdle(engine);
    assertThat(rec.reason.get(1L)).isEqualTo("stop");
  }

  @Test
  void rejectsRequestsThatCannotFitAndTimeGoingBackwards() {
    EngineModel engine = EngineModel.create(config(4));
    assertThatThrownBy(() -> engine.submit(EngineRequest.of(1, tokens(0, 16), tokens(0, 2)), 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("blocks");
    engine.submit(EngineRequest.of(2, tokens(0, 4), tokens(0, 2)), 10);
    assertThatThrownBy(() -> engine.submit(EngineRequest.of(3, tokens(0, 4), tokens(0, 2)), 5))
        .isInstanceOf(IllegalStateException.class);
    assertThatThrownBy(() -> engine.submit(EngineRequest.of(2, tokens(0, 4), tokens(0, 2)), 10))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> engine.submit(EngineRequest.of(4, tokens(0, 4), tokens(0, 2)), 20))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("advanceTo");
  }
}
