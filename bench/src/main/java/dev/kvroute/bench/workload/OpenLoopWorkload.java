package dev.kvroute.bench.workload;

import dev.kvroute.engine.model.EngineConfig;

/**
 * A workload of independent requests with their own arrival times (open loop: a request is sent at its
 * time whatever earlier responses did), each a streamed {@code /v1/completions} request whose prompt is
 * given as token ids, with {@code max_tokens} and {@code ignore_eos} so the reply is exactly that long.
 * The simulator and the open-loop load driver replay it the same way ({@link CompletionRequests}).
 *
 * <p>Requests are numbered {@code 0..size()-1} in arrival order. Prompts are built on demand, so a
 * workload of hundreds of millions of prompt tokens need not be held in memory.
 *
 * <p>Implementations are immutable and thread-safe.
 */
public interface OpenLoopWorkload {
  /** Short name for reports, e.g. {@code mooncake}. */
  String name();

  /** The fleet the workload runs against: replicas, KV capacity and block size, linear timing. */
  FleetSpec fleet();

  /** The configuration of every engine of the fleet (scheduler, capacity, cost model). */
  EngineConfig engine();

  /** Number of requests. */
  int size();

  /** Arrival of request {@code i} in model seconds from the start of the run; non-decreasing in {@code i}. */
  double arrivalSeconds(int i);

  /** The prompt token ids of request {@code i}: a new array on every call. */
  int[] promptTokens(int i);

  /** Prompt length of request {@code i} in tokens, without building the prompt. */
  default int promptLength(int i) {
    return promptTokens(i).length;
  }

  /** Output tokens of request {@code i}, sent as {@code max_tokens} with {@code ignore_eos}; at least 1. */
  int maxTokens(int i);

  /** Session key sent with request {@code i} (header {@value ChatRequests#SESSION_HEADER} and {@code user}), or {@code null}. */
  String sessionKey(int i);
}
