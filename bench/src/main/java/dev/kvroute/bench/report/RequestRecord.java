package dev.kvroute.bench.report;

/**
 * One completed request as a run saw it, for per-request comparisons of real runs with the
 * simulator. Times are model seconds from the start of the run.
 *
 * <p>Immutable and thread-safe.
 *
 * @param session the session's index
 * @param turn the turn's index within the session
 * @param sentSeconds when the request was sent
 * @param ttftSeconds time to first token
 * @param promptTokens prompt tokens
 * @param cachedTokens prompt tokens served from the prefix cache
 * @param backend the replica that served it (its id), or {@code null} when unknown
 */
public record RequestRecord(
    int session, int turn, double sentSeconds, double ttftSeconds, int promptTokens, int cachedTokens, String backend) {}
