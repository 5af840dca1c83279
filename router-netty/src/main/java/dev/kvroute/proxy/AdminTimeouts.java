package dev.kvroute.proxy;

import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;
import io.netty.channel.socket.DuplexChannel;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.LastHttpContent;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Read and idle timeouts of an admin connection, so that no client holds the admin port:
 *
 * <ul>
 *   <li>idle: on a new connection, and after each response, the next request's head must be complete
 *       within {@code idleTimeout}, else the connection is closed (bytes trickling in do not extend it,
 *       so a slow-header client is closed too);
 *   <li>read: once a head has arrived, its body must be complete within {@code readTimeout}, else the
 *       client gets 408 and the connection is closed.
 * </ul>
 *
 * <p>Pipeline position: right after {@code HttpServerCodec} (it sees request heads and contents
 * coming in and responses going out).
 *
 * <p>Not thread-safe: one instance per connection, on its event loop.
 */
final class AdminTimeouts extends ChannelDuplexHandler {
  private final long idleNanos;
  private final long readNanos;
  private ScheduledFuture<?> timer;
  private boolean reading;
  private int unanswered;

  AdminTimeouts(Duration idleTimeout, Duration readTimeout) {
    this.idleNanos = idleTimeout.toNanos();
    this.readNanos = readTimeout.toNanos();
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    arm(ctx, false);
    ctx.fireChannelActive();
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (msg instanceof HttpRequest) {
      reading = true;
      arm(ctx, true);
    }
    if (msg instanceof LastHttpContent) {
      reading = false;
      unanswered++;
      cancel();
    }
    ctx.fireChannelRead(msg);
  }

  @Override
  public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
    if (msg instanceof LastHttpContent || msg instanceof FullHttpResponse) {
      unanswered = Math.max(0, unanswered - 1);
      if (unanswered == 0 && !reading) {
        arm(ctx, false);
      }
    }
    ctx.write(msg, promise);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    cancel();
    ctx.fireChannelInactive();
  }

  @Override
  public void handlerRemoved(ChannelHandlerContext ctx) {
    cancel();
  }

  private void arm(ChannelHandlerContext ctx, boolean read) {
    cancel();
    timer = ctx.executor().schedule(() -> expire(ctx, read), read ? readNanos : idleNanos, TimeUnit.NANOSECONDS);
  }

  private void cancel() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  private void expire(ChannelHandlerContext ctx, boolean read) {
    timer = null;
    boolean answered = ctx.channel() instanceof DuplexChannel && ((DuplexChannel) ctx.channel()).isOutputShutdown();
    if (read && reading && !answered) {
      RequestAggregator aggregator = ctx.pipeline().get(RequestAggregator.class);
      if (aggregator != null) {
        aggregator.abandon();
      }
      ctx.writeAndFlush(new RejectedRequest(HttpResponseStatus.REQUEST_TIMEOUT, "request body not received within "
          + readNanos / 1_000_000 + " ms").response(ctx.alloc())).addListener(ChannelFutureListener.CLOSE);
    } else {
      // idle, or a refused request (already answered) whose body never came
      ctx.close();
    }
  }
}
