package dev.kvroute.core.load;

/**
 * A point-in-time snapshot of one backend's load: what the router itself routed there, plus what the
 * engine's last reported gauges show beyond that ({@link LoadTracker#reportEngine}).
 *
 * <p>The router's own counts are exact and current. The foreign counts are the engine's requests that
 * this router did not send (another router replica, clients calling the engine directly), as of the
 * last scrape; they are {@code 0} when no report was fed.
 *
 * <p>Immutable and thread-safe.
 *
 * @param inFlightRequests requests this router routed to the backend and not yet finished
 * @param inFlightPrefillTokens uncached prompt tokens of this router's requests not yet past their
 *     first token
 * @param prefillingRequests this router's requests not yet past their first token (its prefill queue)
 * @param activeDecodes this router's requests past their first token and not yet finished
 * @param foreignRequests requests the engine reported running or waiting beyond this router's own
 *     ({@code vllm:num_requests_running + vllm:num_requests_waiting - inFlightRequests}, at least 0)
 * @param foreignWaiting requests the engine reported waiting beyond this router's own not yet past
 *     their first token ({@code vllm:num_requests_waiting - prefillingRequests}, at least 0)
 * @param engineKvUsage the engine's reported KV cache usage, 0..1 ({@code vllm:kv_cache_usage_perc}),
 *     or {@code -1} when not reported
 */
public record BackendLoad(
    int inFlightRequests,
    long inFlightPrefillTokens,
    int prefillingRequests,
    int activeDecodes,
    int foreignRequests,
    int foreignWaiting,
    double engineKvUsage) {

  /** An idle backend with no engine report. */
  public static final BackendLoad IDLE = new BackendLoad(0, 0, 0, 0);

  /** The router's own counts, with no engine report (no foreign load, KV usage unknown). */
  public BackendLoad(int inFlightRequests, long inFlightPrefillTokens, int prefillingRequests, int activeDecodes) {
    this(inFlightRequests, inFlightPrefillTokens, prefillingRequests, activeDecodes, 0, 0, -1);
  }
}
