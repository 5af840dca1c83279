package dev.kvroute.core.load;

/**
 * A point-in-time snapshot of one backend's load as the router sees it.
 *
 * <p>Immutable and thread-safe.
 *
 * @param inFlightRequests requests routed to the backend and not yet finished
 * @param inFlightPrefillTokens uncached prompt tokens of requests not yet past their first token
 * @param prefillingRequests requests routed and not yet past their first token (the prefill queue)
 * @param activeDecodes requests past their first token and not yet finished
 * @param externalQueueLength queue length reported by the engine (e.g. {@code vllm:num_requests_waiting}),
 *     or {@code -1} when not fed
 * @param externalKvUsage KV cache usage 0..1 reported by the engine, or {@code -1} when not fed
 */
public record BackendLoad(
    int inFlightRequests,
    long inFlightPrefillTokens,
    int prefillingRequests,
    int activeDecodes,
    int externalQueueLength,
    double externalKvUsage) {

  /** An idle backend with no external load fed. */
  public static final BackendLoad IDLE = new BackendLoad(0, 0, 0, 0, -1, -1);
}
