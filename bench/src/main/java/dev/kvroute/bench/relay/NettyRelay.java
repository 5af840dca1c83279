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
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The proxy-overhead harness's floor for a reverse proxy on Netty: the least an HTTP/1.1 proxy built
 * the way kvroute is (Netty's HTTP codecs, whole bodies aggregated, the transport kvroute picks,
 * {@link Transport#best()}) does per request, with no routing, no metrics, no header rewriting and no
 * body inspection. Each client connection gets its own keep-alive connection to each backend, opened
 * on first use on the client's event loop, and its requests go to the backends in turn (round robin);
 * a request is forwarded as it arrived and the backend's reply returned as it arrived (Netty sets
 * {@code content-length} and keep-alive), so what separates kvroute's round-robin from this floor
 * is kvroute's own work, and what separates this floor from nginx is the JVM and Netty.
 *
 * <p>Requests pipelined on one connection are answered in order (each waits for the reply before
 * it). A backend that cannot be reached, or closes with a request in flight, is answered with
 * {@code 502}; a request the HTTP codec cannot read, with {@code 400} and the connection's close
 * (after the replies to the requests before it); a client that leaves closes its backend
 * connections. Bodies up to {@value #MAX_BODY_BYTES}
 * bytes. Not a product: no timeouts, no retries, no limits beyond that.
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
    ChannelFuture bound = new ServerBootstrap()
        .group(group)
        .channel(transport.serverChannel())
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(MAX_BODY_BYTES),
                new Frontend(fleet, upstream));
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

  /** A client connection: its backend connections and its requests waiting for the one in flight. */
  private static final class Frontend extends SimpleChannelInboundHandler<FullHttpRequest> {
    private final List<InetSocketAddress> backends;
    private final Bootstrap upstream;
    private final Channel[] connections;
    private final ArrayDeque<FullHttpRequest> waiting = new ArrayDeque<>();
    private ChannelHandlerContext ctx;
    private int next;
    private boolean inFlight;
    /** The backend connection the request in flight was written to (null while it connects). */
    private Channel flightOn;
    private boolean keepAlive;
    /** A malformed request was read: nothing after it is forwarded, and the connection ends with 400. */
    private boolean closing;

    Frontend(List<InetSocketAddress> backends, Bootstrap upstream) {
      super(false); // a request is released when forwarded (the encoder) or refused
      this.backends = backends;
      this.upstream = upstream;
      this.connections = new Channel[backends.size()];
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
      this.ctx = ctx;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
      if (req.decoderResult().isFailure()) {
        // a request the codec could not read: answered 400 after the one in flight, then closed
        req.release();
        closing = true;
        if (!inFlight) {
          refuse();
        }
        return;
      }
      if (closing) {
        req.release();
        return;
      }
      if (inFlight) {
        waiting.add(req);
      } else {
        forward(req);
      }
    }

    private void forward(FullHttpRequest req) {
      inFlight = true;
      keepAlive = HttpUtil.isKeepAlive(req);
      int i = next;
      next = (next + 1) % backends.size();
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
                answer(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_GATEWAY, Unpooled.EMPTY_BUFFER));
              }
              return;
            }
            connections[i] = f.channel();
            flightOn = f.channel();
            f.channel().writeAndFlush(req, f.channel().voidPromise());
          });
    }

    /** The reply to the request in flight: relayed, then the next waiting request forwarded. */
    void answer(FullHttpResponse reply) {
      if (!inFlight) {
        reply.release(); // a backend's reply after its request was answered 502: nobody asked for it
        return;
      }
      inFlight = false;
      flightOn = null;
      HttpUtil.setKeepAlive(reply, keepAlive);
      HttpUtil.setContentLength(reply, reply.content().readableBytes());
      reply.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
      if (!keepAlive) {
        ctx.writeAndFlush(reply).addListener(ChannelFutureListener.CLOSE);
        return;
      }
      ctx.writeAndFlush(reply, ctx.voidPromise());
      FullHttpRequest queued = waiting.poll();
      if (queued != null) {
        forward(queued);
      } else if (closing) {
        refuse();
      }
    }

    private void refuse() {
      FullHttpResponse bad = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_REQUEST,
          Unpooled.EMPTY_BUFFER);
      HttpUtil.setContentLength(bad, 0);
      HttpUtil.setKeepAlive(bad, false);
      ctx.writeAndFlush(bad).addListener(ChannelFutureListener.CLOSE);
    }

    /** A backend connection closed: a request in flight on it is answered 502. */
    void backendClosed(Channel backend) {
      for (int i = 0; i < connections.length; i++) {
        if (connections[i] == backend) {
          connections[i] = null;
        }
      }
      if (inFlight && backend == flightOn && ctx.channel().isActive()) {
        answer(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.BAD_GATEWAY, Unpooled.EMPTY_BUFFER));
      }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      for (Channel c : connections) {
        if (c != null) {
          c.close();
        }
      }
      FullHttpRequest r;
      while ((r = waiting.poll()) != null) {
        r.release();
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
      super(false); // the reply is released when written to the client
      this.client = client;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse reply) {
      client.answer(reply);
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
