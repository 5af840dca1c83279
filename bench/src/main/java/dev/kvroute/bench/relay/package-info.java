/**
 * The proxy-overhead harness's Netty floor ({@link dev.kvroute.bench.relay.NettyRelay}): the least
 * a Netty HTTP/1.1 reverse proxy does per request, measured beside kvroute, nginx and HAProxy.
 *
 * <p>May use router-netty's transport choice; nothing of the router itself.
 */
package dev.kvroute.bench.relay;
