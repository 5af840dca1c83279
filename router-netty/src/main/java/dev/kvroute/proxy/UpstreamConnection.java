package dev.kvroute.proxy;

import io.netty.channel.Channel;
import java.util.concurrent.ScheduledFuture;

/**
 * One pooled HTTP/1.1 connection to a backend.
 *
 * <p>Not thread-safe: used on its channel's event loop.
 */
final class UpstreamConnection {
  private final Channel channel;
  private final Backend backend;
  private final UpstreamHandler handler;
  private boolean reused;
  private ScheduledFuture<?> idleClose;

  UpstreamConnection(Channel channel, Backend backend, UpstreamHandler handler) {
    this.channel = channel;
    this.backend = backend;
    this.handler = handler;
  }

  Channel channel() {
    return channel;
  }

  Backend backend() {
    return backend;
  }

  UpstreamHandler handler() {
    return handler;
  }

  /** Whether this connection served an earlier request (so it may have gone stale in the pool). */
  boolean reused() {
    return reused;
  }

  void markReused() {
    reused = true;
  }

  void idleClose(ScheduledFuture<?> f) {
    idleClose = f;
  }

  void cancelIdleClose() {
    if (idleClose != null) {
      idleClose.cancel(false);
      idleClose = null;
    }
  }
}
