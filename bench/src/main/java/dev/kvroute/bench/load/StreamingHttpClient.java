package dev.kvroute.bench.load;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.AttributeKey;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.TimeUnit;

/**
 * A small asynchronous HTTP/1.1 client on Netty for streaming responses: POSTs a body and hands the
 * response body to a listener chunk by chunk as it arrives, so a client can time the first token of a
 * server-sent-event stream. Connections are kept alive and reused (one request at a time each); a
 * reused connection that closes before any response byte is retried once on a fresh connection.
 *
 * <p>Listener methods run on the client's event loop and must not block. Thread-safe: {@link #post}
 * may be called from any thread.
 */
final class StreamingHttpClient implements AutoCloseable {
  private static final AttributeKey<Exchange> EXCHANGE = AttributeKey.valueOf("kvroute.exchange");
  private static final int MAX_ERROR_BODY_BYTES = 4096;

  /** Receives one response. Exactly one of {@link #onEnd} and {@link #onError} is called, once. */
  interface ResponseListener {
    /** A 2xx response's status line and headers arrived. */
    void onHeaders(int status, HttpHeaders headers);

    /** A piece of a 2xx response's body; not retained after the call returns. */
    void onBody(ByteBuf chunk);

    /** The response ended normally. */
    void onEnd();

    /**
     * The exchange failed: connection error, timeout, a connection closed mid-response, or a non-2xx
     * status (with the start of the body in the message).
     */
    void onError(Throwable cause);
  }

  /** A non-2xx response: its status, and the start of its body in the message. */
  static final class StatusException extends IOException {
    private final int status;
    private final String retryAfter;

    StatusException(int status, String retryAfter, String message) {
      super(message);
      this.status = status;
      this.retryAfter = retryAfter;
    }

    int status() {
      return status;
    }

    /** The response's {@code Retry-After} header, or {@code null}. */
    String retryAfter() {
      return retryAfter;
    }
  }

  private final URI base;
  private final String hostHeader;
  private final EventLoopGroup group;
  private final Bootstrap bootstrap;
  private final ConcurrentLinkedDeque<Channel> idle = new ConcurrentLinkedDeque<>();
  private final long timeoutNanos;

  /**
   * @param base scheme, host and port of the server ({@code http://host:port}); its path is ignored
   * @param ioThreads event loop threads
   * @param timeoutNanos wall time after which an unfinished exchange fails and its connection closes
   */
  StreamingHttpClient(URI base, int ioThreads, long timeoutNanos) {
    if (!"http".equals(base.getScheme())) {
      throw new IllegalArgumentException("target: " + base + " (expected: an http:// URL)");
    }
    this.base = base;
    this.timeoutNanos = timeoutNanos;
    int port = base.getPort() < 0 ? 80 : base.getPort();
    this.hostHeader = base.getHost() + ":" + port;
    boolean epoll = Epoll.isAvailable();
    IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    this.group = new MultiThreadIoEventLoopGroup(ioThreads, io);
    this.bootstrap =
        new Bootstrap()
            .group(group)
            .channel(epoll ? EpollSocketChannel.class : NioSocketChannel.class)
            .option(ChannelOption.TCP_NODELAY, true)
            .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
            .remoteAddress(base.getHost(), port)
            .handler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    ch.pipeline().addLast("codec", new HttpClientCodec());
                    ch.pipeline().addLast("response", new ResponseHandler());
                  }
                });
  }

  /** Sends {@code POST path} with {@code body} (JSON) and {@code headers}; the response goes to {@code listener}. */
  void post(String path, Map<String, String> headers, byte[] body, ResponseListener listener) {
    Exchange ex = new Exchange(path, headers, body, listener);
    Channel pooled;
    while ((pooled = idle.pollFirst()) != null) {
      if (pooled.isActive()) {
        ex.reused = true;
        start(pooled, ex);
        return;
      }
    }
    connectAndStart(ex);
  }

  private void connectAndStart(Exchange ex) {
    ex.reused = false;
    ChannelFuture f = bootstrap.connect();
    f.addListener(
        future -> {
          if (future.isSuccess()) {
            start(f.channel(), ex);
          } else {
            ex.fail(new IOException("cannot connect to " + base + ": " + future.cause().getMessage(), future.cause()));
          }
        });
  }

  private void start(Channel ch, Exchange ex) {
    ch.eventLoop()
        .execute(
            () -> {
              if (!ch.isActive()) {
                if (ex.reused) {
                  connectAndStart(ex);
                } else {
                  ex.fail(new IOException("connection to " + base + " closed before the request"));
                }
                return;
              }
              ch.attr(EXCHANGE).set(ex);
              ex.channel = ch;
              ex.timeout =
                  ch.eventLoop()
                      .schedule(
                          () -> {
                            if (ch.attr(EXCHANGE).get() == ex) {
                              ex.fail(new IOException("no complete response within "
                                  + TimeUnit.NANOSECONDS.toSeconds(timeoutNanos) + " s"));
                              ch.close();
                            }
                          },
                          timeoutNanos,
                          TimeUnit.NANOSECONDS);
              FullHttpRequest req =
                  new DefaultFullHttpRequest(
                      HttpVersion.HTTP_1_1, HttpMethod.POST, ex.path, Unpooled.wrappedBuffer(ex.body));
              req.headers()
                  .set(HttpHeaderNames.HOST, hostHeader)
                  .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
                  .set(HttpHeaderNames.ACCEPT, "text/event-stream")
                  .setInt(HttpHeaderNames.CONTENT_LENGTH, ex.body.length);
              ex.headers.forEach((k, v) -> req.headers().set(k, v));
              ch.writeAndFlush(req)
                  .addListener(
                      w -> {
                        if (!w.isSuccess()) {
                          ch.close();
                        }
                      });
            });
  }

  @Override
  public void close() {
    for (Channel ch : idle) {
      ch.close();
    }
    group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
  }

  /** One request and its response's progress. Touched only on the channel's event loop. */
  private final class Exchange {
    final String path;
    final Map<String, String> headers;
    final byte[] body;
    final ResponseListener listener;
    boolean reused;
    Channel channel;
    io.netty.util.concurrent.ScheduledFuture<?> timeout;
    int status;
    boolean gotResponse;
    boolean keepAlive;
    boolean done;
    ByteBuf errorBody;
    String retryAfter;

    Exchange(String path, Map<String, String> headers, byte[] body, ResponseListener listener) {
      this.path = path;
      this.headers = headers;
      this.body = body;
      this.listener = listener;
    }

    void fail(Throwable cause) {
      if (done) {
        return;
      }
      done = true;
      cleanup();
      listener.onError(cause);
    }

    void end() {
      if (done) {
        return;
      }
      done = true;
      cleanup();
      Channel ch = channel;
      if (keepAlive && ch.isActive()) {
        idle.addLast(ch);
      } else {
        ch.close();
      }
      listener.onEnd();
    }

    private void cleanup() {
      if (timeout != null) {
        timeout.cancel(false);
      }
      if (channel != null && channel.attr(EXCHANGE).get() == this) {
        channel.attr(EXCHANGE).set(null);
      }
      if (errorBody != null) {
        errorBody.release();
        errorBody = null;
      }
    }
  }

  /** Routes the pipeline's response objects to the channel's current exchange. */
  private final class ResponseHandler extends SimpleChannelInboundHandler<HttpObject> {
    @Override
    protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
      Exchange ex = ctx.channel().attr(EXCHANGE).get();
      if (ex == null) {
        ctx.close(); // a response nobody asked for
        return;
      }
      if (msg instanceof HttpResponse res) {
        ex.gotResponse = true;
        ex.status = res.status().code();
        ex.keepAlive = HttpUtil.isKeepAlive(res);
        if (ex.status / 100 == 2) {
          ex.listener.onHeaders(ex.status, res.headers());
        } else {
          ex.retryAfter = res.headers().get(HttpHeaderNames.RETRY_AFTER);
          ex.errorBody = ctx.alloc().buffer();
        }
      }
      if (msg instanceof HttpContent content) {
        ByteBuf buf = content.content();
        if (ex.errorBody != null) {
          int room = MAX_ERROR_BODY_BYTES - ex.errorBody.readableBytes();
          ex.errorBody.writeBytes(buf, buf.readerIndex(), Math.min(room, buf.readableBytes()));
        } else if (buf.isReadable()) {
          ex.listener.onBody(buf);
        }
        if (msg instanceof LastHttpContent) {
          if (ex.errorBody != null) {
            String text = ex.errorBody.toString(StandardCharsets.UTF_8);
            ex.fail(new StatusException(ex.status, ex.retryAfter, "HTTP " + ex.status + " from " + base + ex.path + ": " + text));
            ctx.close();
          } else {
            ex.end();
          }
        }
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      idle.remove(ctx.channel());
      Exchange ex = ctx.channel().attr(EXCHANGE).get();
      if (ex != null) {
        if (!ex.gotResponse && ex.reused) {
          ctx.channel().attr(EXCHANGE).set(null);
          if (ex.timeout != null) {
            ex.timeout.cancel(false);
          }
          connectAndStart(ex); // a stale keep-alive connection: retry once on a fresh one
        } else {
          ex.fail(new IOException("connection closed " + (ex.gotResponse ? "mid-response" : "before a response")));
        }
      }
      ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      Exchange ex = ctx.channel().attr(EXCHANGE).get();
      if (ex != null) {
        ex.fail(cause);
      }
      ctx.close();
    }
  }
}
