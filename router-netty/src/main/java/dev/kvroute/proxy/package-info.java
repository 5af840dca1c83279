/**
 * The kvroute reverse proxy on Netty, as a library ({@link dev.kvroute.proxy.KvrouteServer}; no
 * {@code main}): the client pipeline ({@link dev.kvroute.proxy.ProxyInitializer}, {@link
 * dev.kvroute.proxy.RequestAggregator}, {@link dev.kvroute.proxy.ProxyHandler}), one exchange per
 * request ({@link dev.kvroute.proxy.ProxyExchange}), upstream pools, retries and circuit breakers,
 * health checks, the admin API and the metrics. {@code docs/architecture.md} follows one request
 * through these classes.
 *
 * <p>May use router-core, {@code dev.kvroute.proxy.config}, Netty, Jackson and Micrometer; never the
 * mock engine (only its tests do), bench or the app.
 */
package dev.kvroute.proxy;
