package dev.kvroute.engine.server;

import java.util.List;

/**
 * Several mock engines in one process, on consecutive ports (or ephemeral ones with port 0), sharing a
 * small event-loop group: each replica's model, timer and connections live on one of its threads.
 *
 * <p>Thread-safe.
 */
public interface MockEngineFleet extends AutoCloseable {

  /**
   * Starts {@code replicas} engines with the same options, replica {@code i} on {@code port + i}.
   *
   * @throws IllegalArgumentException if {@code replicas < 1}
   * @throws IllegalStateException if a port cannot be bound (replicas already started are closed)
   */
  static MockEngineFleet start(MockEngineOptions options, int replicas) {
    return NettyMockEngine.startFleet(options, replicas);
  }

  /** The replicas, in port order. */
  List<MockEngineServer> replicas();

  /** Base URLs of the replicas, in port order. */
  List<String> urls();

  /** Closes every replica and the shared event loops. */
  @Override
  void close();
}
