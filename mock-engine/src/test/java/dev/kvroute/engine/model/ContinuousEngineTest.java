package dev.kvroute.engine.model;

import static dev.kvroute.engine.model.FcfsPrefillEngineTest.MS;
import static dev.kvroute.engine.model.FcfsPrefillEngineTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.engine.model.EngineConfig.SchedulerKind;
import org.junit.jupiter.api.Test;

/**
 * The continuous-batching engine in exact model time. Cost per step: 20 ms per newly admitted request
 * plus 1 ms per prefill token, plus 10 ms when anything decodes. Block size 4.
 */
class ContinuousEngineTest {

  static EngineConfig.Builder config(int blocks) {
    return EngineConfig.builder()
        .scheduler(SchedulerKind.CONTINUOUS)
        .blockSizeTokens(4)
        .numGpuBlocks(blocks)
        .maxModelLen(blocks * 4)
        .cost(CostModel.linear(1000, 0.020, 100));
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
  void singleRequestPrefillsThenDecodesOneTokenPerStep() {
    EngineModel engine = EngineModel.create(config(64).build());
    submitAt(engine, EngineRequest.of(1, tokens(1000, 10), tokens(5000, 3)), 0);
    runToIdle(engine);
    assertThat(rec.first.get(1L)).isEqualTo(new Recorder.First(30 * MS, 0, 30 * MS, 0));
    assertThat(rec.tokenTimes.get(1L)).containsExactly(30 * MS, 40 * MS, 50 * MS);
  }

  @Test
  void samePromptTwiceHitsTheCacheAndPrefillsLess() {
    EngineModel engine = EngineModel.create(config(64).build());
    int[] prompt = tokens(1000, 10);
    submitAt(engine, EngineRequest.of(1, prompt, tokens(5000, 1)), 0);
    runToIdle(engine);
    submitAt(engine, EngineRequest.of(2, prompt, tokens(5000, 1)), 100 * MS);
    runToIdle(engine);
    assertThat(rec.first.get(2L)).isEqualTo(new Recorder.First(122 * MS, 8, 22 * MS, 0));
    assertThat(engine.stats().prefixHitTokens()).isEqualTo(8);
  }

  @Test
  void longPromptIsChunkedUnderTheTokenBudget() {
    EngineModel engine = EngineModel.create(config(64).maxNumBatchedTokens(8).build());
    submitAt(engine, EngineRequest.of(1, tokens(1000, 20), tokens(5000, 2)), 0);
    runToIdle(engine);
    // Chunks of 8, 8 and 4 tokens: 28 + 8 + 4 ms; the overhead is charged once.
    assertThat(rec.first.get(1L)).isEqualTo(new Recorder.First(40 * MS, 0, 40 * MS, 0));
    assertThat(rec.tokenTimes.get(1L)).containsExactly(40 * MS, 50 * MS);
    assertThat(engine.stats().prefillNanos()).isEqualTo(40 * MS);
  }

  @Test
  void prefillJoinsTheNextStepAndStallsRunningDecodes() {
    EngineModel engine = EngineModel.create(config(64).build());
    submitAt(engine, EngineRequest.of(1, tokens(1000, 4), tokens(5000, 5)), 0);
    submitAt(engine, EngineRequest.of(2, tokens(2000, 10), tokens(6000, 1)), 25 * MS);
    runToIdle(engine);
    // Step 1 [0, 24): prefill 1. Step 2 [24, 34): decode 1. Request 2 arrives at 25 and joins
    // step 3 [34, 74): 20 + 10 ms of prefill plus 10 ms of decode.
    assertThat(rec.tokenTimes.get(1L)).containsExactly(24 * MS, 34 * MS, 74 * MS, 84 * MS, 94 * MS);
    assertThat(rec.first.get(2L)).isEqualTo(new Recorder.First(74 * MS, 0, 40 * MS, 9 * MS));
    assertThat(engine.stats().prefillNanos()).isEqualTo(24 * MS + 30 * MS);
  }

  @Test
  void maxNumSeqsBoundsTheRunningBatch() {
    EngineModel engine = EngineModel.create(config(64).maxNumSeqs(1).build());
    engine.submit(EngineRequest.of(1, tokens(1000, 4), tokens(5000, 2)), 0);
    engine.submit(EngineRequest.of(2, tokens(2000, 4), tokens(6000, 1)), 0);
    engine.advanceTo(1, rec);
    assertThat(engine.stats().running()).isEqualTo(1);
    assertThat(engine.stats().waiting()).isEqualTo(1);
    runToIdle(engine);
    assertThat(rec.finishedAt.get(1L)).isEqualTo(34 * MS);
    assertThat(rec.first.get(2L)).isEqualTo(new Recorder.First(58 * MS, 0, 24 * MS, 34 * MS));
  }

  @Test
  void newestRunningRequestIsPreemptedAndRecomputedWhenBlocksRunOut() {
    // 4 blocks. Two requests of 7 prompt + 6 output tokens; each needs 3 blocks by its third token.
    EngineModel engine = EngineModel.create(config(4).build());
    int[] pb = tokens(2000, 7);
    engine.submit(EngineRequest.of(1, tokens(1000, 7), tokens(5000, 6)), 0);
    engine.submit(EngineRequest.of(2, pb, tokens(6000, 6)), 0);
    runToIdle(engine);
    // Step [0, 54): both prefill (2 x 20 + 14 ms). Step [54, 64): both decode. At 64 request 1 needs a
    // third block: request 2, the newest, is preempted; its leaf block is evicted for request 1.
    assertThat(rec.tokenTimes.get(1L))
        .containsExactly(54 * MS, 64 * MS, 74 * MS, 84 * MS, 94 * MS, 104 * MS);
    // Request 2 restarts at 104 with its first block cached: recomputes 9 - 4 = 5 tokens in 25 ms.
    assertThat(rec.tokenTimes.get(2L))
        .containsExactly(54 * MS, 64 * MS, 129 * MS, 139 * MS, 149 * MS, 159 * MS);
    assertThat(rec.first.get(2L)).isEqualTo(new Recorder.First(54 * MS, 0, 54 * MS, 0));
    assertThat(engine.stats().preemptions()).isEqualTo(1);
    assertThat(rec.reason.get(2L)).isEqualTo("length");
    // The cache statistics count each request's prompt once.
    assertThat(engine.stats().prefixQueryTokens()).isEqualTo(14);
  }

  @Test
  void abortMidStepReleasesBlocksAndTheStepStillEnds() {
    EngineModel engine = EngineModel.create(config(64).build());
    engine.submit(EngineRequest.of(1, tokens(1000, 10), tokens(5000, 3)), 0);
    engine.submit(EngineRequest.of(2, tokens(2000, 10), tokens(6000, 3)), 0);
    engine.advanceTo(10 * MS, rec);
    assertThat(engine.abort(2, 10 * MS, rec)).isTrue();
    ((AbstractEngine) engine).checkInvariants();
    assertThat(engine.stats().usedBlocks()).isEqualTo(3);
    runToIdle(engine);
    assertThat(rec.reason).containsEntry(2L, "abort").containsEntry(1L, "length");
    assertThat(rec.tokenTimes).doesNotContainKey(2L);
    assertThat(rec.tokenTimes.get(1L)).containsExactly(60 * MS, 70 * MS, 80 * MS);
    assertThat(engine.stats().usedBlocks()).isZero();
  }
}
