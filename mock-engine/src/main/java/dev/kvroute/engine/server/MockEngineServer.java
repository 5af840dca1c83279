package dev.kvroute.engine.server;

import dev.kvroute.engine.model.EngineStats;

/**
 * A running mock engine: a vLLM-compatible HTTP server (OpenAI chat and completions, streaming and
 * not, {@code /v1/models}, {@code /health}, {@code /metrics} with vLLM's names) in front of an {@link
 * dev.kvroute.engine.model.EngineModel} driven in wall-clock time times the time scale. See {@code
 * docs/mock-engine.md} for the wire behaviour and fault injection.
 *
 * <pre>{@code
 * try (MockEngineServer engine = MockEngineServer.start(MockEngineOptions.builder().build())) {
 *   String base = engine.url();   // http://127.0.0.1:PORT
 * }
 * }</pre>
 *
 * <p>Thread-safe. The engine model itself lives on one event-loop thread.
 */
public interface MockEngineServer extends AutoCloseable {

  /**
   * Starts one engine on its own event-loop thread and returns once it listens.
   *
   * @throws IllegalStateException if the port cannot be bound (the cause says why)
   */
  static MockEngineServer start(MockEngineOptions options) {
    return NettyMockEngine.startStandalone(options);
  }

  /**
   * The prompt tokenizer every mock engine of this JVM uses for the jtokkit encoding {@code
   * encoding}: one instance per encoding, shared with its piece cache. An in-process client (the
   * bench's demo) tokenizes its workload with it before a run, so the engines find the long messages
   * already encoded, as a warmed-up server would.
   *
   * @throws IllegalArgumentException if jtokkit has no encoding of that name
   */
  static dev.kvroute.core.tokenize.PromptTokenizer sharedPromptTokenizer(String encoding) {
    return NettyMockEngine.sharedPromptTokenizer(encoding);
  }

  /** The bound port. */
  int port();

  /** {@code http://host:port}, with 127.0.0.1 for a wildcard host. */
  String url();

  MockEngineOptions options();

  /** The faults injected now; change them while the engine runs. */
  FaultControl faults();

  /** A snapshot of the engine model's counters and gauges (taken on its thread). */
  EngineStats stats();

  /** Model nanoseconds since the engine started. */
  long modelNanos();

  /**
   * Where the engine publishes vLLM's KV events (the PUB socket, {@code tcp://HOST:PORT} with a
   * wildcard host shown as 127.0.0.1), or null when it does not publish them ({@code
   * --kv-events-config}).
   */
  String kvEventsEndpoint();

  /** The KV events replay (ROUTER) socket's address, or null without one. */
  String kvEventsReplayEndpoint();

  /** KV event batches sent so far (the next one gets this sequence number). */
  long kvEventBatchesPublished();

  /**
   * Drops every cached block now, as vLLM's {@code POST /reset_prefix_cache}, reporting {@code
   * AllBlocksCleared}; nothing happens while a request holds blocks.
   *
   * @return true if the cache was reset
   */
  boolean resetPrefixCache();

  /** Stops listening, closes open connections and frees the event loop if this engine owns it. */
  @Override
  void close();
}
