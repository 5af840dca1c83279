/**
 * The mock engine's HTTP side: a Netty server speaking vLLM's OpenAI-compatible API
 * ({@link dev.kvroute.engine.server.MockEngineServer}, {@link
 * dev.kvroute.engine.server.MockEngineHandler}, {@link dev.kvroute.engine.server.GenerationExchange}),
 * its {@code /metrics} with vLLM's names, fault injection, reply text, fleets of engines in one process
 * ({@link dev.kvroute.engine.server.MockEngineFleet}) and their options.
 *
 * <p>May use {@code dev.kvroute.engine.model}, router-core, Netty, Jackson and Micrometer; no other
 * kvroute module.
 */
package dev.kvroute.engine.server;
