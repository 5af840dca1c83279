package dev.kvroute.proxy;

import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.ChannelGroupFuture;
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

  /**
   * The user event {@link #closeAll} fires on every connection's pipeline: the router is closing
   * now; end the request in progress with an error the client can read, then close.
   */
  static final Object SHUTDOWN = new Object() {
    @Override
    public String toString() {
      return "SHUTDOWN";
    }
  };

  /** The error message of a request the router ends because it is closing. */
  static final String SHUTDOWN_MESSAGE =
      "the router is shutting down; the request was ended before its response completed";

  /** How long {@link #closeAll} lets connections write their last error before closing them. */
  static final Duration SHUTDOWN_GRACE = Duration.ofSeconds(1);

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
   * Closes every open connection, aborting the requests in progress on them. First each connection
   * gets the {@link #SHUTDOWN} user event on its own loop, so that a request in progress ends in a
   * way its client can read (a 503 error, or an SSE stream's error event) before its connection
   * closes; connections still open after {@link #SHUTDOWN_GRACE} (a client not reading its error) or
   * {@code timeout}, whichever is shorter, are closed outright. Each exchange closes its upstream
   * request. Waits up to {@code timeout} in all for the closes to complete.
   */
  void closeAll(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    ChannelGroupFuture closed = channels.newCloseFuture();
    for (Channel ch : channels) {
      ch.eventLoop().execute(() -> ch.pipeline().fireUserEventTriggered(SHUTDOWN));
    }
    closed.awaitUninterruptibly(Math.min(SHUTDOWN_GRACE.toMillis(), timeout.toMillis()));
    long left = Math.max(0, java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
    channels.close().awaitUninterruptibly(left);
  }
}
