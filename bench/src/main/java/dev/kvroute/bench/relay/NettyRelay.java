package dev.kvroute.bench.relay;

import dev.kvroute.proxy.Transport;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpStatusClass;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The proxy-overhead harness's floor for a reverse proxy on Netty: the least an HTTP/1.1 proxy built
 * the way kvroute is (Netty's HTTP codecs, whole bodies aggregated, the transport kvroute picks,
 * {@link Transport#best()}) does per request, with no routing, no metrics, no header rewriting and no
 * body inspection. Requests go to the backends in turn (round robin across all connections); each
 * client connection keeps its own keep-alive connection to each backend, opened on first use on the
 * client's event loop. A request is forwarded as it arrived and the backend's reply returned as it
 * arrived (Netty sets {@code content-length} and keep-alive), so what separates kvroute's round-robin
 * from this floor is kvroute's own work, and what separates this floor from nginx is the JVM and
 * Netty.
 *
 * <p>HTTP: requests pipelined on one connection are answered in order (each waits for the reply
 * before it); informational replies (1xx, but {@code 101}) are dropped, the final reply relayed; a
 * reply from a backend connection that holds no request is dropped; a backend connection that ends
 * its reply with {@code connection: close} (or HTTP/1.0 without keep-alive) is closed and opened
 * anew for the next request. Errors: a backend that cannot be reached, answers with something that
 * is not HTTP, or closes with a request in flight is answered {@code 502}; a request the HTTP codec
 * cannot read, {@code 400}, and one over {@value #MAX_BODY_BYTES} bytes, {@code 413}, each after the
 * replies to the requests before it and followed by the connection's close; a client that leaves
 * closes its backend connections. Not a product: no timeouts, no retries, no limits beyond that;
 * backends are {@code host:port} only (no path prefix).
 *
 * <p>Thread-safe to start and close; each connection's state lives on its event loop.
 */
public final class NettyRelay implements AutoCloseable {
  /** Largest request or reply body aggregated (bytes). */
  static final int MAX_BODY_BYTES = 64 << 20;

  private final EventLoopGroup group;
  private final Channel server;

  private NettyRelay(EventLoopGroup group, Channel server) {
    this.group = group;
    this.server = server;
  }

  /**
   * Starts a relay on {@code bind:port} ({@code 0}: an ephemeral port) in front of {@code backends},
   * on {@code threads} event loops.
   *
   * @throws IllegalArgumentException if {@code backends} is empty or {@code threads < 1}
   * @throws IllegalStateException if the port cannot be bound
   */
  public static NettyRelay start(String bind, int port, List<InetSocketAddress> backends, int threads) {
    if (backends.isEmpty() || threads < 1) {
      throw new IllegalArgumentException("backends: " + backends + ", threads: " + threads
          + " (expected: at least one backend and one thread)");
    }
    Transport transport = Transport.best();
    EventLoopGroup group = transport.group(threads);
    Bootstrap upstream = new Bootstrap()
        .channel(transport.channel())
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 3000);
    List<InetSocketAddress> fleet = List.copyOf(backends);
    AtomicInteger turn = new AtomicInteger(); // the relay's round robin, across its connections
    ChannelFuture bound = new ServerBootstrap()
        .group(group)
        .channel(transport.serverChannel())
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline().addLast(new HttpServerCodec(), new RequestAggregator(),
                new Frontend(fleet, upstream, turn));
          }
        })
        .bind(bind, port)
        .awaitUninterruptibly();
    if (!bound.isSuccess()) {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
      throw new IllegalStateException("cannot bind " + bind + ":" + port + ": " + bound.cause(), bound.cause());
    }
    return new NettyRelay(group, bound.channel());
  }

  /** The port it listens on. */
  public int port() {
    return ((InetSocketAddress) server.localAddress()).getPort();
  }

  /** Closes the listener and every connection; waits up to about 5 seconds for the loops to stop. */
  @Override
  public void close() {
    server.close().awaitUninterruptibly();
    group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
  }

  /** Told to the frontend, in order with the requests, when a request's body is over the limit. */
  private static final Object TOO_LARGE = new Object();

  /**
   * Netty's aggregator, except that a body over the limit is told to the frontend in its turn
   * instead of answered {@code 413} at once, ahead of the replies to the requests before it.
   */
  private static final class RequestAggregator extends HttpObjectAggregator {
    RequestAggregator() {
      super(MAX_BODY_BYTES);
    }

    @Override
    protected void handleOversizedMessage(ChannelHandlerContext ctx, HttpMessage oversized) {
      ReferenceCountUtil.release(oversized);
      ctx.fireUserEventTriggered(TOO_LARGE);
    }
  }

  /** A client connection: its backend connections and its requests waiting for the one in flight. */
  private static final class Frontend extends SimpleChannelInboundHandler<FullHttpRequest> {
    private final List<InetSocketAddress> backends;
    private final Bootstrap upstream;
    private final AtomicInteger turn;
    private final Channel[] connections;
    /** Requests, and at most one refusal (a status), waiting for the one in flight. */
    private final ArrayDeque<Object> waiting = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    private boolean inFlight;
    /** The backend connection the request in flight was written to (null while it connects). */
    private Channel flightOn;
    private boolean keepAlive;
    private boolean headRequest;
    private HttpVersion clientVersion = HttpVersion.HTTP_1_1;
    /** A request was refused: nothing after it is read or forwarded, and the connection ends. */
    private boolean closing;

    Frontend(List<InetSocketAddress> backends, Bootstrap upstream, AtomicInteger turn) {
      super(false); // a request is released when forwarded (the encoder) or refused
      this.backends = backends;
      this.upstream = upstream;
      this.turn = turn;
      this.connections = new Channel[backends.size()];
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      this.ctx = ctx;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
      if (closing) {
        req.release();
        return;
      }
      if (req.decoderResult().isFailure()) {
        req.release();
        refuseInTurn(HttpResponseStatus.BAD_REQUEST);
        return;
      }
      if (inFlight) {
        waiting.add(req);
      } else {
        forward(req);
      }
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
      if (event == TOO_LARGE) {
        if (!closing) {
          refuseInTurn(HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE);
        }
        return;
      }
      ctx.fireUserEventTriggered(event);
    }

    /** Refuses the request just read with {@code status} once the ones before it are answered. */
    private void refuseInTurn(HttpResponseStatus status) {
      closing = true;
      if (inFlight) {
        waiting.add(status);
      } else {
        refuse(status);
      }
    }

    private void forward(FullHttpRequest req) {
      inFlight = true;
      keepAlive = HttpUtil.isKeepAlive(req);
      headRequest = HttpMethod.HEAD.equals(req.method());
      clientVersion = req.protocolVersion();
      int i = Math.floorMod(turn.getAndIncrement(), backends.size());
      Channel c = connections[i];
      if (c != null && c.isActive()) {
        flightOn = c;
        c.writeAndFlush(req, c.voidPromise());
        return;
      }
      flightOn = null;
      upstream.clone(ctx.channel().eventLoop())
          .handler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
              ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(MAX_BODY_BYTES), new Backend(Frontend.this));
            }
          })
          .connect(backends.get(i))
          .addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess() || !ctx.channel().isActive()) {
              req.release();
              f.channel().close();
              if (ctx.channel().isActive()) {
                answer(null, badGateway());
              }
              return;
            }
            connections[i] = f.channel();
            flightOn = f.channel();
            f.channel().writeAndFlush(req, f.channel().voidPromise());
          });
    }

    private static FullHttpResponse badGateway() {
      return new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_GATEWAY, Unpooled.EMPTY_BUFFER);
    }

    /**
     * A reply read on {@code from} (null: the relay's own): relayed if it is the final reply to the
     * request in flight, then the next waiting request forwarded; otherwise dropped.
     */
    void answer(Channel from, FullHttpResponse reply) {
      if (!inFlight || from != null && from != flightOn) {
        reply.release(); // nobody asked for it: a request already answered, or an unsolicited reply
        return;
      }
      HttpResponseStatus status = reply.status();
      if (status.codeClass() == HttpStatusClass.INFORMATIONAL && status.code() != 101) {
        reply.release(); // 100 Continue, 103 Early Hints: the final reply follows
        return;
      }
      if (from != null && !HttpUtil.isKeepAlive(reply)) {
        forget(from);
        from.close(); // its server closes it after this reply; the next request opens another
      }
      inFlight = false;
      flightOn = null;
      if (!headRequest) {
        HttpUtil.setContentLength(reply, reply.content().readableBytes());
      }
      reply.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
      if (clientVersion.equals(HttpVersion.HTTP_1_0)) {
        reply.setProtocolVersion(HttpVersion.HTTP_1_0);
        reply.headers().set(HttpHeaderNames.CONNECTION, keepAlive ? HttpHeaderValues.KEEP_ALIVE : HttpHeaderValues.CLOSE);
      } else {
        reply.setProtocolVersion(HttpVersion.HTTP_1_1);
        HttpUtil.setKeepAlive(reply, keepAlive);
      }
      if (!keepAlive) {
        closing = true;
        ctx.writeAndFlush(reply).addListener(ChannelFutureListener.CLOSE);
        return;
      }
      ctx.writeAndFlush(reply, ctx.voidPromise());
      Object queued = waiting.poll();
      if (queued instanceof FullHttpRequest next) {
        forward(next);
      } else if (queued instanceof HttpResponseStatus refusal) {
        refuse(refusal);
      }
    }

    private void refuse(HttpResponseStatus status) {
      FullHttpResponse refusal = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, Unpooled.EMPTY_BUFFER);
      HttpUtil.setContentLength(refusal, 0);
      HttpUtil.setKeepAlive(refusal, false);
      ctx.writeAndFlush(refusal).addListener(ChannelFutureListener.CLOSE);
    }

    private void forget(Channel backend) {
      for (int i = 0; i < connections.length; i++) {
        if (connections[i] == backend) {
          connections[i] = null;
        }
      }
    }

    /** A backend connection closed: a request in flight on it is answered 502. */
    void backendClosed(Channel backend) {
      forget(backend);
      if (inFlight && backend == flightOn && ctx.channel().isActive()) {
        answer(null, badGateway());
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      for (Channel c : connections) {
        if (c != null) {
          c.close();
        }
      }
      Object o;
      while ((o = waiting.poll()) != null) {
        ReferenceCountUtil.release(o);
      }
      ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }

  /** A backend connection of one client connection: its replies go to that client. */
  private static final class Backend extends SimpleChannelInboundHandler<FullHttpResponse> {
    private final Frontend client;

    Backend(Frontend client) {
      super(false); // the reply is released when written to the client, or dropped
      this.client = client;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse reply) {
      if (reply.decoderResult().isFailure()) {
        reply.release(); // not HTTP: the connection is useless; its close answers the request 502
        ctx.close();
        return;
      }
      client.answer(ctx.channel(), reply);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      client.backendClosed(ctx.channel());
      ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }
}
