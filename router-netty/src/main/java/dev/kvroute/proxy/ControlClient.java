package dev.kvroute.proxy;

import dev.kvroute.proxy.config.BackendConfig;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A small HTTP client for the router's own requests to backends (health probes, {@code /metrics}
 * for KV capacity, {@code /v1/models} for the merged model list): one fresh connection per request,
 * {@code Connection: close}, the whole answer aggregated (at most 16 MiB).
 *
 * <p>Thread-safe.
 */
final class ControlClient {
  /** Largest control response accepted. */
  static final int MAX_RESPONSE_BYTES = 16 << 20;

  /** A backend's answer. */
  record Response(int status, String contentType, byte[] body) {
    boolean ok() {
      return status >= 200 && status < 300;
    }
  }

  private final Bootstrap template;
  /** Connections open now (a request in flight), closed by {@link #close}. */
  private final ChannelGroup open = new DefaultChannelGroup("kvroute-control", GlobalEventExecutor.INSTANCE);

  ControlClient(EventLoopGroup group, Class<? extends SocketChannel> channelClass, Duration connectTimeout) {
    this.template = new Bootstrap()
        .group(group)
        .channel(channelClass)
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis()))
        .handler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline()
                .addLast(new HttpClientCodec())
                .addLast(new HttpObjectAggregator(MAX_RESPONSE_BYTES));
          }
        });
  }

  /**
   * Sends {@code GET basePath + path} to {@code backend}. The future completes with the response, or
   * exceptionally with the connect error, a {@link TimeoutException} after {@code timeout}, or the
   * I/O error.
   *
   * @param extraHeaders headers to add (e.g. the client's {@code Authorization}), or {@code null}
   */
  CompletableFuture<Response> get(BackendConfig backend, String path, HttpHeaders extraHeaders, Duration timeout) {
    return send(backend, HttpMethod.GET, path, extraHeaders, null, timeout);
  }

  /**
   * Sends {@code POST basePath + path} with a JSON {@code body} to {@code backend}; completes as
   * {@link #get}.
   */
  CompletableFuture<Response> postJson(BackendConfig backend, String path, byte[] body, Duration timeout) {
    return send(backend, HttpMethod.POST, path, null, body, timeout);
  }

  /** As {@link #postJson(BackendConfig, String, byte[], Duration)}, adding {@code extraHeaders} (or none). */
  CompletableFuture<Response> postJson(BackendConfig backend, String path, HttpHeaders extraHeaders, byte[] body,
      Duration timeout) {
    return send(backend, HttpMethod.POST, path, extraHeaders, body, timeout);
  }

  /**
   * Closes the connections of requests still in flight (their futures fail) and waits up to
   * {@code timeout} for the closes, so that none is left to the event loops' shutdown (see
   * {@code KvrouteServer.close()}). Requests sent afterwards still work.
   */
  void close(Duration timeout) {
    open.close().awaitUninterruptibly(timeout.toMillis());
  }

  private CompletableFuture<Response> send(BackendConfig backend, HttpMethod method, String path,
      HttpHeaders extraHeaders, byte[] body, Duration timeout) {
    CompletableFuture<Response> result = new CompletableFuture<>();
    ChannelFuture connect = template.clone().handler(template.config().handler())
        .connect(backend.host(), backend.port());
    Channel ch = connect.channel();
    open.add(ch);
    ScheduledFuture<?> timer = ch.eventLoop().schedule(() -> {
      if (result.completeExceptionally(new TimeoutException("no answer from " + backend.name() + path + " within "
          + timeout.toMillis() + " ms"))) {
        ch.close();
      }
    }, timeout.toNanos(), TimeUnit.NANOSECONDS);
    result.whenComplete((r, e) -> timer.cancel(false));
    connect.addListener((ChannelFuture f) -> {
      if (!f.isSuccess()) {
        result.completeExceptionally(f.cause());
        return;
      }
      f.channel().pipeline().addLast(new SimpleChannelInboundHandler<FullHttpResponse>() {
        @Override
        protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse msg) {
          result.complete(new Response(msg.status().code(), msg.headers().get(HttpHeaderNames.CONTENT_TYPE),
              ByteBufUtil.getBytes(msg.content())));
          ctx.close();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
          result.completeExceptionally(new java.io.IOException("connection closed before the response"));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
          result.completeExceptionally(cause);
          ctx.close();
        }
      });
      FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, method,
          backend.basePath() + path, body == null ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(body));
      if (body != null) {
        req.headers()
            .set(HttpHeaderNames.CONTENT_TYPE, "application/json")
            .setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
      }
      if (extraHeaders != null) {
        req.headers().add(extraHeaders);
      }
      req.headers()
          .set(HttpHeaderNames.HOST, backend.authority())
          .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE)
          .set(HttpHeaderNames.ACCEPT, "*/*");
      f.channel().writeAndFlush(req).addListener((ChannelFuture w) -> {
        if (!w.isSuccess()) {
          result.completeExceptionally(w.cause());
          w.channel().close();
        }
      });
    });
    return result;
  }
}
