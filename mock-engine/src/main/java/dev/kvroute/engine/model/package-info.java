/**
 * The engine model: a discrete-event model of one inference engine in model time ({@link
 * dev.kvroute.engine.model.EngineModel}): KV block pool with prefix caching and LRU eviction ({@link
 * dev.kvroute.engine.model.BlockPool}), schedulers (continuous, FCFS prefill), cost models (linear,
 * Dynamo's fitted polynomials), requests, listeners and statistics.
 *
 * <p>May use the JDK only; reads no clock and no random source (the server drives it in scaled wall
 * time, the simulator in virtual time).
 */
package dev.kvroute.engine.model;
