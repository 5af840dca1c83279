/**
 * Per-backend load as the router sees it ({@link dev.kvroute.core.load.LoadTracker}: requests,
 * prefill tokens, decodes; leases that end exactly once) and as engines report it ({@link
 * dev.kvroute.core.load.EngineLoad}, the foreign load).
 *
 * <p>May use {@code dev.kvroute.core} and the JDK only.
 */
package dev.kvroute.core.load;
