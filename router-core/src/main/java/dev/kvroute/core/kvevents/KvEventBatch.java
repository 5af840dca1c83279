package dev.kvroute.core.kvevents;

import java.util.List;

/**
 * vLLM's {@code KVEventBatch}: the events one engine step produced, published as one ZMQ message.
 *
 * <p>Immutable and thread-safe.
 *
 * @param ts when the engine built the batch, epoch seconds ({@code time.time()})
 * @param events the events, in the order the engine produced them
 * @param dataParallelRank the publishing data-parallel rank, or {@code -1} when absent
 */
public record KvEventBatch(double ts, List<KvEvent> events, int dataParallelRank) {
  public KvEventBatch {
    events = List.copyOf(events);
  }
}
