package dev.kvroute.engine.model;

/**
 * Time an engine spends on prefill and decode, in model nanoseconds. Prefill time depends on uncached
 * tokens only.
 *
 * <p>Implementations are immutable and thread-safe.
 */
public interface CostModel {
  /** Model nanoseconds to prefill {@code uncachedTokens} new tokens of one request (or chunk). */
  long prefillNanos(int uncachedTokens);

  /** Model nanoseconds between two output tokens of a request when {@code activeDecodes} decode together. */
  long interTokenNanos(int activeDecodes);
}
