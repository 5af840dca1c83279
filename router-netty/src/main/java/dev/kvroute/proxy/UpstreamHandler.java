package dev.kvroute.proxy;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpObject;
import io.netty.util.ReferenceCountUtil;
import java.lang.System.Logger.Level;

/**
 * The last handler of an upstream (router → backend) channel: hands every decoded response object to
 * the request currently using the connection, or, while the connection idles in the pool, closes it
 * on any unexpected byte.
 *
 * <p>Ownership: a message passed to the {@link Listener} belongs to it; with no listener the message
 * is released here.
 *
 * <p>Pipeline: {@code HttpClientCodec} → this. Auto-read is off; the listener asks for reads.
 *
 * <p>Not thread-safe: used on the channel's event loop only (which is also the client channel's).
 */
final class UpstreamHandler extends ChannelInboundHandlerAdapter {
  private static final System.Logger LOG = System.getLogger(UpstreamHandler.class.getName());

  /** The request using this connection. */
  interface Listener {
    /** A response object; the listener owns it. */
    void onUpstreamMessage(HttpObject msg);

    /** The end of one read burst: flush what was relayed and decide when to read again. */
    void onUpstreamReadComplete();

    /** The connection closed; {@code cause} is the error that closed it, or {@code null}. */
    void onUpstreamInactive(Throwable cause);
  }

  private final ProxyMetrics metrics;
  private Listener listener;
  private Throwable lastCause;
  private Runnable onIdleClose;

  UpstreamHandler(ProxyMetrics metrics) {
    this.metrics = metrics;
  }

  /** Attaches the request using the connection, or detaches it with {@code null}. */
  void listener(Listener listener) {
    this.listener = listener;
  }

  /** Called when the connection closes while nobody uses it (pool bookkeeping). */
  void onIdleClose(Runnable onIdleClose) {
    this.onIdleClose = onIdleClose;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    Listener l = listener;
    if (l != null && msg instanceof HttpObject) {
      l.onUpstreamMessage((HttpObject) msg);
      return;
    }
    ReferenceCountUtil.release(msg);
    if (l == null) {
      // a pooled connection must be silent between requests
      ctx.close();
    }
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    Listener l = listener;
    if (l != null) {
      l.onUpstreamReadComplete();
    }
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    Listener l = listener;
    listener = null;
    if (l != null) {
      l.onUpstreamInactive(lastCause);
    } else if (onIdleClose != null) {
      onIdleClose.run();
    }
    ctx.fireChannelInactive();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    lastCause = cause;
    metrics.channelException("upstream");
    LOG.log(Level.DEBUG, () -> ctx.channel() + " upstream error: " + cause);
    ctx.close();
  }
}
