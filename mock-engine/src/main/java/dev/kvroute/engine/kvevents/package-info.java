/**
 * The mock engine's KV events as vLLM publishes them ({@code vllm/distributed/kv_events.py}): the
 * configuration ({@link dev.kvroute.engine.kvevents.KvEventsConfig}), the msgpack encoding of event
 * batches in each layout ({@link dev.kvroute.engine.kvevents.KvEventEncoder}, {@link
 * dev.kvroute.engine.kvevents.KvEventLayout}, {@link dev.kvroute.engine.kvevents.BlockHashFormat}) and
 * the ZMQ publisher with its replay socket ({@link dev.kvroute.engine.kvevents.ZmqKvEventPublisher}).
 *
 * <p>May use the engine model's events, Jackson, msgpack-core and JeroMQ; nothing of Netty or another
 * kvroute module.
 */
package dev.kvroute.engine.kvevents;
