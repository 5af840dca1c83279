/**
 * The HTTP load driver: sessions of streaming chat requests against a target, open or closed loop
 * ({@link dev.kvroute.bench.load.LoadDriver}, {@link dev.kvroute.bench.load.OpenLoopDriver}), an SSE
 * reader, client-side TTFT, and the engines' Prometheus counters read before and after ({@link
 * dev.kvroute.bench.load.EngineMetrics}).
 *
 * <p>May use {@code dev.kvroute.bench.workload} and {@code .report}, router-core's Prometheus text
 * reader ({@code dev.kvroute.core.exposition}), Netty and Jackson.
 */
package dev.kvroute.bench.load;
