/**
 * Routing without networking: {@link dev.kvroute.core.RouterCore} and its default composition
 * {@link dev.kvroute.core.DefaultRouterCore} (tokenize, match in the prefix index, choose by policy, insert
 * and pin, lease), backend identity ({@link dev.kvroute.core.BackendId}) and the injected clock
 * ({@link dev.kvroute.core.Ticker}).
 *
 * <p>May use its subpackages, the JDK, Jackson, Caffeine and jtokkit; never Netty, another kvroute
 * module, a wall clock or a shared random source (time and randomness are injected).
 */
package dev.kvroute.core;
