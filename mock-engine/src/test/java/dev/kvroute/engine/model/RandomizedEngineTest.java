package dev.kvroute.engine.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.engine.model.EngineConfig.SchedulerKind;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Random multi-turn traffic with aborts against a small pool: the accounting invariants hold after
 * every operation, every request ends exactly once, and finished ones emit all their tokens.
 */
class RandomizedEngineTest {

  @ParameterizedTest
  @EnumSource(SchedulerKind.class)
  void invariantsHoldUnderRandomTrafficWithAborts(SchedulerKind kind) {
    for (long seed = 1; seed <= 20; seed++) {
      run(kind, seed);
    }
  }

  private void run(SchedulerKind kind, long seed) {
    SplittableRandom rnd = new SplittableRandom(seed);
    EngineConfig config =
        EngineConfig.builder()
            .scheduler(kind)
            .blockSizeTokens(4)
            .numGpuBlocks(40)
            .maxModelLen(160)
            .maxNumBatchedTokens(16 + rnd.nextInt(64))
            .maxNumSeqs(1 + rnd.nextInt(8))
            .cost(rnd.nextBoolean() ? CostModel.linear(2000, 0.005, 50) : CostModel.dynamo())
            .build();
    AbstractEngine engine = (AbstractEngine) EngineModel.create(config);
    Recorder rec = new Recorder();
    List<int[]> histories = new ArrayList<>();
    Set<Long> submitted = new HashSet<>();
    Set<Long> aborted = new HashSet<>();
    long now = 0;
    for (long id = 0; id < 300; id++) {
      now += rnd.nextLong(40_000_000L);
      engine.advanceTo(now, rec);
      engine.checkInvariants();
      int[] prompt;
      if (!histories.isEmpty() && rnd.nextInt(3) > 0) {
        int[] base = histories.get(rnd.nextInt(histories.size()));
        prompt = FcfsPrefillEngineTest.concat(base, FcfsPrefillEngineTest.tokens(rnd.nextInt(1 << 20), 1 + rnd.nextInt(12)));
      } else {
        prompt = FcfsPrefillEngineTest.tokens(rnd.nextInt(1 << 20), 1 + rnd.nextInt(40));
      }
      int[] output = FcfsPrefillEngineTest.tokens(rnd.nextInt(1 << 20), 1 + rnd.nextInt(20));
      if (prompt.length + output.length > 150) {
        prompt = FcfsPrefillEngineTest.tokens(rnd.nextInt(1 << 20), 20);
      }
      int expectCached = engine.cachedPrefixTokens(prompt);
      assertThat(expectCached % 4).isZero();
      assertThat(expectCached).isLessThanOrEqualTo(((prompt.length - 1) / 4) * 4);
      engine.submit(EngineRequest.of(id, prompt, output), now);
      submitted.add(id);
      histories.add(FcfsPrefillEngineTest.concat(prompt, output));
      if (histories.size() > 20) {
        histories.remove(0);
      }
      engine.checkInvariants();
      if (rnd.nextInt(10) == 0) {
        long victim = rnd.nextLong(id + 1);
        if (engine.abort(victim, now, rec)) {
          aborted.add(victim);
        }
        engine.checkInvariants();
      }
    }
    while (engine.nextEventNanos() != Long.MAX_VALUE) {
      engine.advanceTo(engine.nextEventNanos(), rec);
      engine.checkInvariants();
    }
    assertThat(rec.reason.keySet()).isEqualTo(submitted);
    for (long id : submitted) {
      if (!aborted.contains(id)) {
        assertThat(rec.reason.get(id)).isEqualTo("length");
        assertThat(rec.first).containsKey(id);
      } else {
        assertThat(rec.reason.get(id)).isEqualTo("abort");
      }
    }
    EngineStats stats = engine.stats();
    assertThat(stats.usedBlocks()).isZero();
    assertThat(stats.running()).isZero();
    assertThat(stats.waiting()).isZero();
    assertThat(engine.activeRequests()).isZero();
    assertThat(stats.prefixHitTokens()).isPositive();
  }
}
