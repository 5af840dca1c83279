package dev.kvroute.engine.model;

/**
 * A discrete-event model of one inference engine: a KV block pool with a prefix cache and LRU eviction,
 * a scheduler, and a cost model, all in model time (nanoseconds). The mock server drives it with wall
 * time times the time scale; the simulator drives it with a virtual clock. Nothing in it reads a clock.
 *
 * <p>Not thread-safe: one thread (the server's engine event loop, or the simulator) owns an instance.
 */
public interface EngineModel {

  /** Accepts a request arriving at {@code nowNanos}; it waits for blocks and a prefill slot. */
  void submit(EngineRequest request, long nowNanos);

  /** Cancels a request at {@code nowNanos}: its blocks are released and it finishes with {@code abort}. */
  void abort(long requestId, long nowNanos, EngineListener listener);

  /** Model time of the next internal event, or {@link Long#MAX_VALUE} when idle. */
  long nextEventNanos();

  /** Processes every event up to and including {@code nowNanos}, reporting them to {@code listener}. */
  void advanceTo(long nowNanos, EngineListener listener);

  /**
   * Leading tokens of {@code promptTokens} the prefix cache holds right now (whole blocks, vLLM's
   * {@code num_tokens - 1} cap applied). Read-only: does not touch LRU order. The simulator's
   * {@code oracle} policy reads it.
   */
  int cachedPrefixTokens(int[] promptTokens);

  /** A snapshot of counters and gauges, as {@code /metrics} exports them. */
  EngineStats stats();

  EngineConfig config();
}
