package dev.kvroute.bench.load;

import dev.kvroute.bench.report.FiguresRecorder;
import dev.kvroute.bench.report.RequestRecord;
import java.util.List;
import java.util.Map;

/**
 * What the load driver measured over one run, before the engines' metrics are added.
 *
 * @param figures per-request figures: usage prompt and cached tokens, client-measured TTFT in model
 *     seconds (wall × time scale)
 * @param errors requests that failed (their sessions stopped there)
 * @param errorSamples the first few error messages
 * @param cachedUnreported completed requests whose usage had no {@code cached_tokens} (counted as 0;
 *     vLLM reports them only with {@code --enable-prompt-tokens-details})
 * @param requestsPerBackend completed requests per {@code x-kvroute-backend} response header (empty when
 *     the target does not send it)
 * @param wallSeconds wall time from the first scheduled request to the last response's end
 * @param maxSendLateMillis the latest a request was sent after its scheduled wall time (client overload
 *     shows here)
 * @param p99SendLateMillis the 99th percentile of how late requests were sent after their scheduled
 *     wall times
 * @param requests every completed request, in completion order
 * @param side the side traffic's figures (requests sent straight to an engine, bypassing the routers;
 *     none when the run had no side traffic), kept out of {@code figures} and {@code requests}
 */
public record LoadResult(
    FiguresRecorder figures,
    long errors,
    List<String> errorSamples,
    long cachedUnreported,
    Map<String, Long> requestsPerBackend,
    double wallSeconds,
    double maxSendLateMillis,
    double p99SendLateMillis,
    List<RequestRecord> requests,
    FiguresRecorder side) {
  public LoadResult {
    requests = List.copyOf(requests);
    errorSamples = List.copyOf(errorSamples);
    requestsPerBackend = Map.copyOf(requestsPerBackend);
  }
}
