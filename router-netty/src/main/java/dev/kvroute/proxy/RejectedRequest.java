package dev.kvroute.proxy;

import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.util.concurrent.TimeUnit;

/**
 * A request the {@link RequestAggregator} refused (too large, malformed, unsupported expectation),
 * passed down the pipeline in place of a request so that the error is answered in order.
 *
 * <p>Immutable and thread-safe.
 *
 * @param status the status to answer (413, 414, 431, 400, 401, 417, 501)
 * @param message what was wrong, for the error body
 * @param authenticate the {@code WWW-Authenticate} challenge of a 401, else {@code null}
 */
record RejectedRequest(HttpResponseStatus status, String message, String authenticate) {
  /** How long a rejected connection is drained before it is closed. */
  static final long DRAIN_MILLIS = 2_000;

  RejectedRequest(HttpResponseStatus status, String message) {
    this(status, message, null);
  }

  /** The error response, with {@code Connection: close}. */
  FullHttpResponse response(ByteBufAllocator alloc) {
    FullHttpResponse r = HttpErrors.response(alloc, status, message, null, false);
    if (authenticate != null) {
      r.headers().set(HttpHeaderNames.WWW_AUTHENTICATE, authenticate);
    }
    return r;
  }

  /**
   * Writes the error on {@code channel}, then half-closes it and keeps reading (the aggregator
   * discards what it reads) for at most {@link #DRAIN_MILLIS} before closing, so that the client
   * reads the answer instead of a connection reset caused by its unread request bytes.
   */
  void answer(Channel channel) {
    channel.writeAndFlush(response(channel.alloc())).addListener((ChannelFutureListener) f -> {
      Channel ch = f.channel();
      if (!f.isSuccess() || !(ch instanceof DuplexChannel)) {
        ch.close();
        return;
      }
      ((DuplexChannel) ch).shutdownOutput();
      ch.eventLoop().schedule(() -> ch.close(), DRAIN_MILLIS, TimeUnit.MILLISECONDS);
      ch.read();
    });
  }
}
