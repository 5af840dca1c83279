package dev.kvroute.engine.model;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What both schedulers share: the block pool, request bookkeeping, prefix lookup, block growth and
 * registration, token emission, the clock discipline and the counters. Not thread-safe.
 */
abstract class AbstractEngine implements EngineModel {
  final EngineConfig config;
  final int blockSize;
  final BlockPool pool;
  final CostModel cost;
  final Map<Long, Sequence> requests = new HashMap<>();
  /** The current step's cache changes; null when {@link EngineConfig#enableKvCacheEvents()} is off. */
  private final ArrayList<KvCacheEvent> kvEvents;
  /** Latest model time seen. */
  long clock;
  private long order;

  long prefixQueryTokens;
  long prefixHitTokens;
  long promptTokens;
  long generationTokens;
  long prefillNanos;
  long preemptions;

  AbstractEngine(EngineConfig config) {
    this.config = config;
    this.blockSize = config.blockSizeTokens();
    this.kvEvents = config.enableKvCacheEvents() ? new ArrayList<>() : null;
    this.pool = new BlockPool(config.numGpuBlocks(), kvEvents);
    this.cost = config.cost();
  }

  @Override
  public final EngineConfig config() {
    return config;
  }

  @Override
  public final int activeRequests() {
    return requests.size();
  }

  @Override
  public final void submit(EngineRequest request, long nowNanos) {
    checkTime(nowNanos);
    if (nextEventNanos() < nowNanos) {
      throw new IllegalStateException("submit at " + nowNanos + " with an unprocessed event at "
          + nextEventNanos() + " (call advanceTo(" + nowNanos + ") first)");
    }
    if (requests.containsKey(request.id())) {
      throw new IllegalArgumentException("request id " + request.id() + " is already in the engine");
    }
    int needed = Sequence.blocksFor(request.totalTokens() - 1, blockSize);
    if (needed > pool.capacity()) {
      throw new IllegalArgumentException("request " + request.id() + " needs " + needed
          + " blocks for " + (request.totalTokens() - 1) + " tokens (expected: <= "
          + pool.capacity() + " blocks in the pool)");
    }
    clock = nowNanos;
    Sequence s = new Sequence(request, nowNanos, order++, blockSize);
    requests.put(s.id, s);
    enqueue(s, nowNanos);
  }

  @Override
  public final boolean abort(long requestId, long nowNanos, EngineListener listener) {
    advanceTo(nowNanos, listener);
    Sequence s = requests.get(requestId);
    if (s == null) {
      return false;
    }
    remove(s, nowNanos);
    finish(s, nowNanos, EngineRequest.ABORT, listener);
    flushKvEvents(nowNanos, listener);
    return true;
  }

  @Override
  public final boolean resetPrefixCache(long nowNanos, EngineListener listener) {
    advanceTo(nowNanos, listener);
    if (!pool.clearCache()) {
      return false;
    }
    if (kvEvents != null) {
      kvEvents.add(new KvCacheEvent.AllBlocksCleared());
      flushKvEvents(nowNanos, listener);
    }
    return true;
  }

  @Override
  public final void advanceTo(long nowNanos, EngineListener listener) {
    checkTime(nowNanos);
    long t;
    while ((t = nextEventNanos()) <= nowNanos) {
      clock = t;
      processNext(t, listener);
      flushKvEvents(t, listener);
    }
    clock = nowNanos;
  }

  @Override
  public final int cachedPrefixTokens(int[] promptTokens) {
    return cachedPrefixTokens(promptTokens, null);
  }

  @Override
  public final int cachedPrefixTokens(int[] promptTokens, String loraName) {
    int maxBlocks = (promptTokens.length - 1) / blockSize;
    long parent = BlockHashes.root(loraName);
    int hits = 0;
    while (hits < maxBlocks) {
      parent = BlockHashes.next(parent, promptTokens, hits * blockSize, blockSize);
      if (pool.peek(parent) == null) {
        break;
      }
      hits++;
    }
    return hits * blockSize;
  }

  @Override
  public final EngineStats stats() {
    return new EngineStats(
        runningCount(),
        waitingCount(),
        (double) pool.used() / pool.capacity(),
        pool.used(),
        pool.cachedBlocks(),
        prefixQueryTokens,
        prefixHitTokens,
        promptTokens,
        generationTokens,
        prefillNanos,
        pool.evictions(),
        preemptions);
  }

  /** Puts a newly submitted request in the queue and schedules a scheduling event at {@code now}. */
  abstract void enqueue(Sequence s, long now);

  /** Removes a request from every queue (it is being aborted). */
  abstract void remove(Sequence s, long now);

  /** Processes the earliest event, which happens at {@code t}. */
  abstract void processNext(long t, EngineListener listener);

  abstract int runningCount();

  abstract int waitingCount();

  private void checkTime(long nowNanos) {
    if (nowNanos < clock) {
      throw new IllegalStateException(
          "time went backwards: " + nowNanos + " < " + clock + " (model nanoseconds)");
    }
  }

  /** Leading cached full blocks of the sequence's known tokens, capped so one token is recomputed. */
  final int countHits(Sequence s) {
    int maxBlocks = (s.numTokens - 1) / blockSize;
    int hits = 0;
    while (hits < maxBlocks && pool.peek(s.hash(hits)) != null) {
      hits++;
    }
    return hits;
  }

  /** How many of the first {@code hits} blocks are evictable now (acquiring them shrinks the pool). */
  final int evictableAmong(Sequence s, int hits) {
    int n = 0;
    for (int i = 0; i < hits; i++) {
      if (pool.peek(s.hash(i)).refCount == 0) {
        n++;
      }
    }
    return n;
  }

  /**
   * Starts (or restarts) a request holding no blocks: acquires its {@code hits} cached blocks and
   * {@code ownedBlocks} new ones, and on its first start records the cache lookup. The caller has
   * checked that the blocks are available.
   */
  final void admit(Sequence s, int hits, int ownedBlocks, long now) {
    if (s.heldBlocks() != 0) {
      throw new IllegalStateException("admit of request " + s.id + " holding blocks");
    }
    for (int i = 0; i < hits; i++) {
      BlockPool.Block b = pool.peek(s.hash(i));
      pool.acquire(b);
      s.blocks[i] = b;
    }
    s.cachedHeld = hits;
    if (!pool.allocateOwned(ownedBlocks)) {
      throw new IllegalStateException("admit without enough blocks");
    }
    s.ownedHeld = ownedBlocks;
    s.computed = hits * blockSize;
    if (!s.started) {
      s.started = true;
      s.cachedTokens = s.computed;
      s.firstScheduledNanos = now;
      prefixQueryTokens += s.promptLen;
      prefixHitTokens += s.cachedTokens;
      promptTokens += s.promptLen;
    }
  }

  /** Gives a running request blocks to hold {@code targetTokens} tokens; false if not available. */
  final boolean grow(Sequence s, int targetTokens) {
    int need = Sequence.blocksFor(targetTokens, blockSize) - s.heldBlocks();
    if (need <= 0) {
      return true;
    }
    if (!pool.allocateOwned(need)) {
      return false;
    }
    s.ownedHeld += need;
    return true;
  }

  /** Registers every full computed block of the request in the prefix cache. */
  final void registerComputed(Sequence s) {
    int full = Math.min(s.computed / blockSize, s.heldBlocks());
    int newRun = -1;
    while (s.cachedHeld < full) {
      int i = s.cachedHeld;
      long hash = s.hash(i);
      boolean isNew = kvEvents != null && pool.peek(hash) == null;
      s.blocks[i] = pool.promote(hash);
      s.cachedHeld++;
      s.ownedHeld--;
      if (isNew && newRun < 0) {
        newRun = i;
      } else if (!isNew && newRun >= 0) {
        recordStored(s, newRun, i);
        newRun = -1;
      }
    }
    if (newRun >= 0) {
      recordStored(s, newRun, s.cachedHeld);
    }
  }

  /**
   * Records blocks {@code [from, to)} of the request, which just entered the cache, as one {@code
   * BlockStored} (vLLM's {@code cache_full_blocks} reports each request's newly cached run in one
   * event, parent first). A block another request had cached already is not reported again: the model
   * keeps one copy per hash, so every stored hash is later removed exactly once.
   */
  private void recordStored(Sequence s, int from, int to) {
    long[] hashes = new long[to - from];
    for (int i = from; i < to; i++) {
      hashes[i - from] = s.hash(i);
    }
    Long parent = from == 0 ? null : s.hash(from - 1);
    int[] tokens = Arrays.copyOfRange(s.tokens, from * blockSize, to * blockSize);
    // the adapter reaches the event as vLLM's lora_name (its blocks' hashes are seeded with it too)
    String lora = s.request.loraName();
    kvEvents.add(new KvCacheEvent.BlockStored(hashes, parent, tokens, blockSize, loraId(lora), lora));
  }

  /**
   * The {@code lora_id} reported for adapter {@code loraName}: vLLM reports the adapter's integer id
   * ({@code lora_int_id}, given at load); the mock has none, so it derives a stable positive one from
   * the name (1 .. 2^31 - 2), which legacy-layout consumers (no {@code lora_name}) can key on.
   */
  static Integer loraId(String loraName) {
    return loraName == null ? null : Math.floorMod(loraName.hashCode(), Integer.MAX_VALUE - 1) + 1;
  }

  /** Hands the step's cache changes, if any, to the listener as one batch. */
  private void flushKvEvents(long nowNanos, EngineListener listener) {
    if (kvEvents != null && !kvEvents.isEmpty()) {
      List<KvCacheEvent> batch = List.copyOf(kvEvents);
      kvEvents.clear();
      listener.onKvEvents(nowNanos, batch);
    }
  }

  /** Releases every block, last block first, so the prefix stays cached longest. */
  final void releaseAll(Sequence s) {
    pool.freeOwned(s.ownedHeld);
    s.ownedHeld = 0;
    for (int i = s.cachedHeld - 1; i >= 0; i--) {
      pool.release(s.blocks[i]);
      s.blocks[i] = null;
    }
    s.cachedHeld = 0;
  }

  /**
   * The step that brought {@code computed} to {@code numTokens} ended at {@code now}: emits the next
   * output token. Returns true when that was the last one (the caller then finishes the request).
   */
  final boolean emitToken(Sequence s, long now, EngineListener listener) {
    registerComputed(s);
    int index = s.generated;
    if (index == 0) {
      listener.onFirstToken(
          s.id, now, s.cachedTokens, now - s.firstScheduledNanos, s.firstScheduledNanos - s.arrivalNanos);
    }
    s.generated++;
    generationTokens++;
    listener.onToken(s.id, now, index, s.tokens[s.promptLen + index]);
    if (s.generated == s.outputLen) {
      return true;
    }
    s.numTokens++;
    return false;
  }

  /** Ends a request that was removed from the queues: releases its blocks and reports it. */
  final void finish(Sequence s, long now, String reason, EngineListener listener) {
    s.finished = true;
    releaseAll(s);
    requests.remove(s.id);
    listener.onFinished(s.id, now, reason);
  }

  /**
   * Checks the accounting of the pool against the requests.
   *
   * @throws IllegalStateException naming the first broken invariant
   */
  void checkInvariants() {
    long refs = 0;
    int owned = 0;
    for (Sequence s : requests.values()) {
      refs += s.cachedHeld;
      owned += s.ownedHeld;
      for (int i = 0; i < s.cachedHeld; i++) {
        if (s.blocks[i] == null || s.blocks[i].hash != s.hash(i)) {
          throw new IllegalStateException("request " + s.id + " block " + i + " is not its prefix");
        }
      }
      if (s.computed > s.numTokens || s.generated > s.outputLen) {
        throw new IllegalStateException("request " + s.id + " counters out of range");
      }
    }
    pool.checkInvariants(refs, owned);
  }
}
