package dev.kvroute.engine.model;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.engine.model.EngineConfig.SchedulerKind;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The engine model's KV events: a consumer that applies them to a set of hashes holds exactly the
 * model's prefix cache after every step, every stored block chains to its parent through its token
 * ids, and batches come one per step in model-time order.
 */
class KvCacheEventsTest {

  /** Applies events as a consumer would and checks them against each other. */
  private static final class Consumer implements EngineListener {
    final Set<Long> held = new HashSet<>();
    /** hash -> tokens of the block, as the events told. */
    final Map<Long, int[]> tokens = new HashMap<>();
    final List<List<KvCacheEvent>> batches = new ArrayList<>();
    final List<Long> batchTimes = new ArrayList<>();
    final int blockSize;

    Consumer(int blockSize) {
      this.blockSize = blockSize;
    }

    @Override
    public void onFirstToken(long id, long now, int cached, long prefill, long queue) {}

    @Override
    public void onToken(long id, long now, int index, int tokenId) {}

    @Override
    public void onFinished(long id, long now, String reason) {}

    @Override
    public void onKvEvents(long nowNanos, List<KvCacheEvent> events) {
      assertThat(events).isNotEmpty();
      if (!batchTimes.isEmpty()) {
        assertThat(nowNanos).isGreaterThanOrEqualTo(batchTimes.get(batchTimes.size() - 1));
      }
      batchTimes.add(nowNanos);
      batches.add(events);
      for (KvCacheEvent e : events) {
        if (e instanceof KvCacheEvent.BlockStored s) {
          assertThat(s.blockSize()).isEqualTo(blockSize);
          long parent = s.parentBlockHash() == null ? BlockHashes.root(s.loraName()) : s.parentBlockHash();
          if (s.parentBlockHash() != null) {
            assertThat(held).as("parent of a stored run is cached").contains(s.parentBlockHash());
          }
          for (int i = 0; i < s.blockHashes().length; i++) {
            long expected = BlockHashes.next(parent, s.tokenIds(), i * blockSize, blockSize);
            assertThat(s.blockHashes()[i]).as("chained hash of block " + i).isEqualTo(expected);
            assertThat(held.add(expected)).as("stored once until removed").isTrue();
            tokens.put(expected, Arrays.copyOfRange(s.tokenIds(), i * blockSize, (i + 1) * blockSize));
            parent = expected;
          }
        } else if (e instanceof KvCacheEvent.BlockRemoved r) {
          assertThat(r.blockHashes()).hasSize(1);
          assertThat(held.remove(r.blockHashes()[0])).as("removed a held block").isTrue();
        } else {
          held.clear();
        }
      }
    }
  }

  private static Set<Long> cachedHashes(AbstractEngine engine) {
    Set<Long> out = new HashSet<>();
    // Every cached block is either evictable (in the LRU list) or held by a request.
    for (long h : engine.pool.evictionOrder()) {
      out.add(h);
    }
    for (Sequence s : engine.requests.values()) {
      for (int i = 0; i < s.cachedHeld; i++) {
        out.add(s.blocks[i].hash);
      }
    }
    return out;
  }

  @ParameterizedTest
  @EnumSource(SchedulerKind.class)
  void eventsReplayedByAConsumerGiveExactlyTheCachedBlocks(SchedulerKind kind) {
    for (long seed = 1; seed <= 10; seed++) {
      SplittableRandom rnd = new SplittableRandom(seed);
      EngineConfig config = EngineConfig.builder()
          .scheduler(kind).blockSizeTokens(4).numGpuBlocks(40).maxModelLen(160)
          .maxNumBatchedTokens(32).maxNumSeqs(4).cost(CostModel.linear(2000, 0.005, 50))
          .enableKvCacheEvents(true).build();
      AbstractEngine engine = (AbstractEngine) EngineModel.create(config);
      Consumer consumer = new Consumer(4);
      List<int[]> histories = new ArrayList<>();
      long now = 0;
      for (long id = 0; id < 200; id++) {
        now += rnd.nextLong(40_000_000L);
        engine.advanceTo(now, consumer);
        assertThat(consumer.held).isEqualTo(cachedHashes(engine));
        int[] prompt = !histories.isEmpty() && rnd.nextInt(3) > 0
            ? FcfsPrefillEngineTest.concat(histories.get(rnd.nextInt(histories.size())),
                FcfsPrefillEngineTest.tokens(rnd.nextInt(1 << 20), 1 + rnd.nextInt(12)))
            : FcfsPrefillEngineTest.tokens(rnd.nextInt(1 << 20), 1 + rnd.nextInt(40));
        if (prompt.length > 120) {
          prompt = FcfsPrefillEngineTest.tokens(rnd.nextInt(1 << 20), 20);
        }
        int[] output = FcfsPrefillEngineTest.tokens(rnd.nextInt(1 << 20), 1 + rnd.nextInt(20));
        engine.submit(EngineRequest.of(id, prompt, output), now);
        histories.add(FcfsPrefillEngineTest.concat(prompt, output));
        if (rnd.nextInt(10) == 0) {
          engine.abort(rnd.nextLong(id + 1), now, consumer);
        }
      }
      while (engine.nextEventNanos() != Long.MAX_VALUE) {
        now = Math.max(now, engine.nextEventNanos());
        engine.advanceTo(now, consumer);
        assertThat(consumer.held).isEqualTo(cachedHashes(engine));
      }
      assertThat(engine.stats().evictedBlocks()).as("the pool was small enough to evict").isPositive();
      assertThat(consumer.batches.stream().flatMap(List::stream)
          .filter(e -> e instanceof KvCacheEvent.BlockRemoved).count())
          .isEqualTo(engine.stats().evictedBlocks());

      assertThat(engine.resetPrefixCache(now + 1, consumer)).isTrue();
      assertThat(consumer.batches.get(consumer.batches.size() - 1))
          .containsExactly(new KvCacheEvent.AllBlocksCleared());
      assertThat(consumer.held).isEmpty();
      assertThat(engine.stats().cachedBlocks()).isZero();
      engine.checkInvariants();
    }
  }

  @Test
  void aRequestsPromptBlocksAreOneBlockStoredWithTheirTokensAndNoParent() {
    EngineModel engine = EngineModel.create(EngineConfig.builder()
        .blockSizeTokens(4).numGpuBlocks(16).enableKvCacheEvents(true).build());
    Consumer consumer = new Consumer(4);
    int[] prompt = FcfsPrefillEngineTest.tokens(7, 10);
    engine.submit(EngineRequest.of(1, prompt, new int[] {1, 2}), 0);
    engine.advanceTo(engine.nextEventNanos(), consumer);
    while (consumer.batches.isEmpty()) {
      engine.advanceTo(engine.nextEventNanos(), consumer);
    }
    KvCacheEvent.BlockStored first = (KvCacheEvent.BlockStored) consumer.batches.get(0).get(0);
    assertThat(first.parentBlockHash()).isNull();
    assertThat(first.tokenIds()).containsExactly(Arrays.copyOf(prompt, 8));
    assertThat(first.blockHashes()).containsExactly(BlockHashes.of(prompt, 4));
    assertThat(first.loraId()).isNull();
    assertThat(first.loraName()).isNull();
  }

  @Test
  void aLoraRequestsBlocksCarryTheAdapterAndItsHashChain() {
    EngineModel engine = EngineModel.create(EngineConfig.builder()
        .blockSizeTokens(4).numGpuBlocks(16).enableKvCacheEvents(true).build());
    Consumer consumer = new Consumer(4);
    int[] prompt = FcfsPrefillEngineTest.tokens(7, 10);
    engine.submit(new EngineRequest(1, prompt, new int[] {1, 2}, EngineRequest.LENGTH, "sql-lora"), 0);
    while (consumer.batches.isEmpty()) {
      engine.advanceTo(engine.nextEventNanos(), consumer);
    }
    KvCacheEvent.BlockStored first = (KvCacheEvent.BlockStored) consumer.batches.get(0).get(0);
    assertThat(first.loraName()).isEqualTo("sql-lora");
    assertThat(first.loraId()).isEqualTo(AbstractEngine.loraId("sql-lora")).isPositive();
    assertThat(first.blockHashes()).containsExactly(BlockHashes.of(prompt, 4, "sql-lora"));
    assertThat(first.blockHashes()).doesNotContain(BlockHashes.of(prompt, 4));
  }

  @Test
  void resetIsRefusedWhileARequestHoldsBlocks() {
    EngineModel engine = EngineModel.create(EngineConfig.builder()
        .blockSizeTokens(4).numGpuBlocks(16).enableKvCacheEvents(true).build());
    Consumer consumer = new Consumer(4);
    engine.submit(EngineRequest.of(1, FcfsPrefillEngineTest.tokens(7, 10), new int[] {1, 2, 3, 4, 5}), 0);
    engine.advanceTo(engine.nextEventNanos(), consumer);
    assertThat(engine.activeRequests()).isOne();
    int batches = consumer.batches.size();
    assertThat(engine.resetPrefixCache(engine.nextEventNanos() - 1, consumer)).isFalse();
    assertThat(consumer.batches).hasSize(batches);
  }

  @Test
  void noEventsWhenDisabled() {
    EngineModel engine = EngineModel.create(EngineConfig.builder().blockSizeTokens(4).numGpuBlocks(16).build());
    Consumer consumer = new Consumer(4);
    engine.submit(EngineRequest.of(1, FcfsPrefillEngineTest.tokens(7, 10), new int[] {1, 2}), 0);
    long now = 0;
    while (engine.nextEventNanos() != Long.MAX_VALUE) {
      now = engine.nextEventNanos();
      engine.advanceTo(now, consumer);
    }
    assertThat(engine.resetPrefixCache(now, consumer)).isTrue();
    assertThat(consumer.batches).isEmpty();
  }
}
