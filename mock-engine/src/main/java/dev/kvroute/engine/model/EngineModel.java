package dev.kvroute.engine.model;

/**
 * A discrete-event model of one inference engine: a KV block pool with a prefix cache and LRU eviction,
 * a scheduler, and a cost model, all in model time (nanoseconds). The mock server drives it with wall
 * time times the time scale; the simulator drives it with a virtual clock. Nothing in it reads a clock
 * or a random source.
 *
 * <h2>Driving it</h2>
 *
 * <pre>{@code
 * EngineModel engine = EngineModel.create(config);
 * engine.submit(request, now);                 // after advanceTo(now, ...)
 * while (engine.nextEventNanos() != Long.MAX_VALUE) {
 *   engine.advanceTo(engine.nextEventNanos(), listener);
 * }
 * }</pre>
 *
 * Time never goes backwards: {@code submit}, {@code abort} and {@code advanceTo} take a time at least
 * the latest one seen. A submission does not start work by itself: it schedules an event at {@code
 * nowNanos}, so all requests submitted at one instant are scheduled together by the next {@code
 * advanceTo}.
 *
 * <h2>KV cache</h2>
 *
 * A pool of {@code numGpuBlocks} blocks of {@code blockSizeTokens} tokens. Each full block of a
 * request's tokens (prompt, then generated tokens) is keyed by a chained 64-bit hash of its tokens and
 * its parent block's hash, and registered in the prefix cache once its KV is computed (the prompt's
 * blocks at the end of the prefill or chunk that computes them, the generated tokens' blocks as decode
 * fills them; the last output token is never computed, as in vLLM). When a request starts (or restarts
 * after preemption) it reuses the longest run of cached leading full blocks, capped at {@code
 * floor((tokens - 1) / blockSize)} blocks because the last token is always recomputed. Blocks no
 * request holds stay cached and are evicted least recently released first; when a request ends its
 * blocks are released last block first, so a prefix outlives its tails. Allocation takes never-cached
 * free blocks before evicting cached ones. Blocks a request holds are never evicted.
 *
 * <h2>Schedulers</h2>
 *
 * {@link EngineConfig.SchedulerKind#FCFS_PREFILL}: one request prefills at a time in arrival order; at
 * its start it reserves blocks for its whole sequence (prompt plus output), and waits at the head of the
 * queue until they are available. Its first token is emitted when the prefill ends; then one token
 * every {@link CostModel#decodeNanos decodeNanos(1, kvUsage)}, independent of the queue and of other
 * decodes. {@link EngineConfig.SchedulerKind#CONTINUOUS}: vLLM v1-like steps, described on {@code
 * ContinuousEngine}: running requests first (one token per decode, prompt chunks otherwise), then
 * waiting ones in order under {@code maxNumBatchedTokens} and {@code maxNumSeqs}; when a running
 * request cannot get a block the newest running request is preempted (LIFO), releases its blocks and
 * is recomputed later; a waiting request that cannot get blocks waits.
 *
 * <p>Not thread-safe: one thread (the server's engine event loop, or the simulator) owns an instance.
 */
public interface EngineModel {

  /** A new engine with an empty cache at model time 0. */
  static EngineModel create(EngineConfig config) {
    return switch (config.scheduler()) {
      case FCFS_PREFILL -> new FcfsPrefillEngine(config);
      case CONTINUOUS -> new ContinuousEngine(config);
    };
  }

  /**
   * Accepts a request arriving at {@code nowNanos}; it is scheduled at the next {@link #advanceTo}.
   *
   * @throws IllegalArgumentException if the id is already in the engine, or the request's tokens
   *     ({@code prompt + output - 1}) need more blocks than the whole pool
   * @throws IllegalStateException if {@code nowNanos} is earlier than a time already seen, or events
   *     earlier than {@code nowNanos} have not been processed ({@code advanceTo(nowNanos)} first)
   */
  void submit(EngineRequest request, long nowNanos);

  /**
   * Cancels a request at {@code nowNanos}, after processing events up to {@code nowNanos}: its blocks
   * are released (the computed full blocks stay cached) and {@code listener} gets {@code
   * onFinished(id, nowNanos, "abort")}.
   *
   * @return false (and no event) if the request is unknown or already finished
   * @throws IllegalStateException if {@code nowNanos} is earlier than a time already seen
   */
  boolean abort(long requestId, long nowNanos, EngineListener listener);

  /**
   * Drops every cached block at {@code nowNanos} (after processing events up to it), as vLLM's {@code
   * reset_prefix_cache}: only when no request holds a block; otherwise nothing changes. With {@link
   * EngineConfig#enableKvCacheEvents()}, a reset reports {@link KvCacheEvent.AllBlocksCleared} to
   * {@code listener} as a batch of its own. The cache counters (hits, queries, evictions) are kept.
   *
   * @return true if the cache was reset, false if blocks were in use
   * @throws IllegalStateException if {@code nowNanos} is earlier than a time already seen
   */
  boolean resetPrefixCache(long nowNanos, EngineListener listener);

  /** Model time of the next internal event, or {@link Long#MAX_VALUE} when there is nothing to do. */
  long nextEventNanos();

  /**
   * Processes every event up to and including {@code nowNanos}, in time order, reporting them to
   * {@code listener}.
   *
   * @throws IllegalStateException if {@code nowNanos} is earlier than a time already seen
   */
  void advanceTo(long nowNanos, EngineListener listener);

  /**
   * Leading tokens of {@code promptTokens} the prefix cache holds right now (whole blocks, vLLM's
   * {@code num_tokens - 1} cap applied). Read-only: does not touch LRU order. The simulator's {@code
   * oracle} policy reads it.
   */
  int cachedPrefixTokens(int[] promptTokens);

  /**
   * As {@link #cachedPrefixTokens(int[])} for a request run with LoRA adapter {@code loraName}
   * ({@code null}: the base model): only blocks cached under the same adapter count.
   */
  int cachedPrefixTokens(int[] promptTokens, String loraName);

  /** A snapshot of counters and gauges, as {@code /metrics} exports them. */
  EngineStats stats();

  EngineConfig config();

  /** Requests in the engine (waiting or running); 0 means idle. */
  int activeRequests();
}
