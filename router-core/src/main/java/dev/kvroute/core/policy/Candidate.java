package dev.kvroute.core.policy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.BackendLoad;

/**
 * One healthy backend a policy may choose, with what the router knows of it for this request.
 *
 * <p>Immutable and thread-safe.
 *
 * @param backend the backend
 * @param matchedTokens leading prompt tokens the backend is believed (index) or known (oracle) to
 *     hold in its KV cache
 * @param load its load at decision time
 */
public record Candidate(BackendId backend, int matchedTokens, BackendLoad load) {}
