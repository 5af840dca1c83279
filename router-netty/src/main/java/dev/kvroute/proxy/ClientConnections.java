package dev.kvroute.proxy;

import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.time.Duration;

/**
 * The proxy's open client connections, and whether it is draining: shutting down gracefully, so
 * that every connection is closed once its request in progress has been answered (an idle one at
 * once), and each response relayed meanwhile says {@code Connection: close}.
 *
 * <p>Thread-safe: connections are added from every event loop; the drain signal reaches each
 * connection on its own loop as the {@link #DRAIN} user event.
 */
final class ClientConnections {
  /** The user event {@link #startDraining} fires on every connection's pipeline. */
  static final Object DRAIN = new Object() {
    @Override
    public String toString() {
      return "DRAIN";
    }
  };

  private final ChannelGroup channels = new DefaultChannelGroup("kvroute-clients", GlobalEventExecutor.INSTANCE);
  private volatile boolean draining;

  /** Tracks {@code channel} until it closes. */
  void add(Channel channel) {
    channels.add(channel);
  }

  /** Whether {@link #startDraining} was called. */
  boolean draining() {
    return draining;
  }

  /** Client connections open now. */
  int open() {
    return channels.size();
  }

  /**
   * Signals every open connection to close once its request in progress is answered. A connection
   * accepted concurrently sees {@link #draining()} when it becomes active. Returns at once.
   */
  void startDraining() {
    draining = true;
    for (Channel ch : channels) {
      ch.eventLoop().execute(() -> ch.pipeline().fireUserEventTriggered(DRAIN));
    }
  }

  /**
   * Closes every open connection, aborting the requests in progress on them (each one's upstream
   * request is closed by its exchange), and waits up to {@code timeout} for the closes to complete.
   */
  void closeAll(Duration timeout) {
    channels.close().awaitUninterruptibly(timeout.toMillis());
  }
}
