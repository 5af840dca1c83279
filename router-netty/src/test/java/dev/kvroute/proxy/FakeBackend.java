package dev.kvroute.proxy;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A tiny scriptable HTTP backend for proxy tests: records every request it receives and answers as
 * the {@code x-fake} request header directs (semicolon-separated {@code key=value}):
 *
 * <ul>
 *   <li>{@code status=N}: answer N with an OpenAI-style error body;
 *   <li>{@code events=N} (streaming requests): N content events (default 3);
 *   <li>{@code interval-ms=M}: pause between events (default 0);
 *   <li>{@code close-after=K}: streaming: close the connection after K events;
 *   <li>{@code stall}: never answer;
 *   <li>{@code delay-ms=D}: wait before the response headers;
 *   <li>{@code head-delay-ms=D} (streaming): send the response head at once, then wait D ms before the
 *       first event (an engine whose request waits in its queue);
 *   <li>{@code stall-after=K} (streaming): after K events send nothing more, keeping the connection;
 *   <li>{@code partial-after=K} (streaming): after K events send the first half of the next one (cut
 *       inside its JSON), then nothing more, keeping the connection;
 *   <li>{@code usage=P/C}: report {@code prompt_tokens} P and {@code cached_tokens} C;
 *   <li>{@code close}: answer with {@code Connection: close};
 *   <li>{@code trailer}: streaming: end with a trailer header;
 *   <li>{@code bulk=N}: a chunked body of N bytes ({@code 0123456789} repeated), written as fast as the
 *       socket accepts it (next write only when the previous one completed and the channel is
 *       writable), counting accepted bytes in {@link #bulkWritten};
 *   <li>{@code drop-reused}: close without answering when the request is not the first on its
 *       connection (a connection the backend considered idle and closed).
 * </ul>
 *
 * A request is streaming when its body contains {@code "stream":true}. {@code GET /health} answers
 * 200 unless {@link #healthy(boolean)} was set false; {@code GET /v1/models} lists {@link #model} and {@link #DEFAULT_MODEL} (not recorded as received).
 */
final class FakeBackend implements AutoCloseable {
  /** One request as the backend received it. */
  record Received(String method, String uri, HttpHeaders headers, byte[] body) {
    String bodyText() {
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  final String name;
  final String model;
  /** The model every fake backend serves (besides its own {@link #model}), so requests for it go anywhere. */
  static final String DEFAULT_MODEL = "fake-model";
  final List<Received> received = new CopyOnWriteArrayList<>();
  final AtomicInteger connectionsOpened = new AtomicInteger();
  final AtomicInteger connectionsClosed = new AtomicInteger();
  /** Streams whose connection closed before the stream ended (the client aborted). */
  final AtomicInteger abortedStreams = new AtomicInteger();
  final AtomicInteger completedStreams = new AtomicInteger();
  /** Half events written by {@code partial-after} streams. */
  final AtomicInteger partialsWritten = new AtomicInteger();
  private final AtomicBoolean healthy = new AtomicBoolean(true);
  /** Bytes of {@code bulk} bodies accepted by the socket so far. */
  final java.util.concurrent.atomic.AtomicLong bulkWritten = new java.util.concurrent.atomic.AtomicLong();
  /** What {@code GET /metrics} answers. */
  final java.util.concurrent.atomic.AtomicReference<String> metricsText = new java.util.concurrent.atomic.AtomicReference<>(
      "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"100\"} 1.0\n");
  /** When non-zero, every generation request is answered with this status. */
  final AtomicInteger forcedStatus = new AtomicInteger();
  /** When set, directives (as in {@code x-fake}) applied to every request before the header's. */
  final java.util.concurrent.atomic.AtomicReference<String> forcedDirectives =
      new java.util.concurrent.atomic.AtomicReference<>();
  private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
  private final Channel server;

  FakeBackend(String name) {
    this(name, DEFAULT_MODEL);
  }

  FakeBackend(String name, String model) {
    this.name = name;
    this.model = model;
    ServerBootstrap b = new ServerBootstrap()
        .group(group)
        .channel(NioServerSocketChannel.class)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            connectionsOpened.incrementAndGet();
            ch.closeFuture().addListener(f -> connectionsClosed.incrementAndGet());
            ch.pipeline()
                .addLast(new HttpServerCodec())
                .addLast(new HttpObjectAggregator(256 << 20))
                .addLast(new Handler());
          }
        });
    server = b.bind("127.0.0.1", 0).syncUninterruptibly().channel();
  }

  int port() {
    return ((InetSocketAddress) server.localAddress()).getPort();
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + port());
  }

  void healthy(boolean h) {
    healthy.set(h);
  }

  /** Stops accepting connections and closes the open ones (a killed backend). */
  @Override
  public void close() {
    server.close().syncUninterruptibly();
    group.shutdownGracefully(0, 0, TimeUnit.MILLISECONDS).syncUninterruptibly();
  }

  Received last() {
    return received.get(received.size() - 1);
  }

  private Map<String, String> directives(FullHttpRequest req) {
    Map<String, String> d = new HashMap<>();
    parse(forcedDirectives.get(), d);
    parse(req.headers().get("x-fake"), d);
    return d;
  }

  private static void parse(String directives, Map<String, String> into) {
    if (directives != null) {
      for (String part : directives.split(";")) {
        int eq = part.indexOf('=');
        into.put(eq < 0 ? part.trim() : part.substring(0, eq).trim(), eq < 0 ? "" : part.substring(eq + 1).trim());
      }
    }
  }

  private static final io.netty.util.AttributeKey<Integer> SERVED = io.netty.util.AttributeKey.valueOf("served");

  private final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
      String path = req.uri();
      if (path.equals("/health")) {
        respond(ctx, healthy.get() ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE, "", req, Map.of());
        return;
      }
      if (path.equals("/metrics")) {
        respond(ctx, HttpResponseStatus.OK, metricsText.get(), req, Map.of());
        return;
      }
      if (path.equals("/v1/models")) {
        // read by the router's model discovery in the background: not recorded as a received request
        String card = "{\"id\":\"" + model + "\",\"object\":\"model\",\"owned_by\":\"" + name + "\"}";
        String shared = model.equals(DEFAULT_MODEL) ? ""
            : ",{\"id\":\"" + DEFAULT_MODEL + "\",\"object\":\"model\",\"owned_by\":\"" + name + "\"}";
        respond(ctx, HttpResponseStatus.OK, "{\"object\":\"list\",\"data\":[" + card + shared + "]}", req, Map.of());
        return;
      }
      received.add(new Received(req.method().name(), req.uri(), new DefaultHttpHeaders().add(req.headers()),
          ByteBufUtil.getBytes(req.content())));
      Map<String, String> d = directives(req);
      int served = ctx.channel().attr(SERVED).get() == null ? 0 : ctx.channel().attr(SERVED).get();
      ctx.channel().attr(SERVED).set(served + 1);
      if (d.containsKey("drop-reused") && served > 0) {
        ctx.close();
        return;
      }
      if (forcedStatus.get() != 0) {
        d.put("status", String.valueOf(forcedStatus.get()));
      }
      if (d.containsKey("stall")) {
        return;
      }
      long delay = Long.parseLong(d.getOrDefault("delay-ms", "0"));
      boolean keepAlive = HttpUtil.isKeepAlive(req) && !d.containsKey("close");
      String body = req.content().toString(StandardCharsets.UTF_8);
      boolean stream = body.replace(" ", "").contains("\"stream\":true");
      Runnable answer = () -> {
        if (d.containsKey("bulk")) {
          bulk(ctx, Long.parseLong(d.get("bulk")));
        } else if (d.containsKey("status")) {
          int code = Integer.parseInt(d.get("status"));
          respond(ctx, HttpResponseStatus.valueOf(code),
              "{\"error\":{\"message\":\"fake " + code + "\",\"type\":\"X\",\"param\":null,\"code\":" + code + "}}",
              req, Map.of("close", String.valueOf(!keepAlive)));
        } else if (stream) {
          stream(ctx, d, keepAlive);
        } else {
          respond(ctx, HttpResponseStatus.OK, completion(d), req, Map.of("close", String.valueOf(!keepAlive)));
        }
      };
      if (delay > 0) {
        ctx.executor().schedule(answer, delay, TimeUnit.MILLISECONDS);
      } else {
        answer.run();
      }
    }

    private void bulk(ChannelHandlerContext ctx, long total) {
      HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
      head.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/octet-stream")
          .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
      ctx.writeAndFlush(head);
      byte[] block = new byte[16 << 10];
      for (int i = 0; i < block.length; i++) {
        block[i] = (byte) ('0' + i % 10);
      }
      new Object() {
        long sent;

        {
          next();
        }

        void next() {
          if (!ctx.channel().isActive()) {
            return;
          }
          if (sent >= total) {
            ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
            return;
          }
          int n = (int) Math.min(block.length, total - sent);
          // keep the digit pattern continuous across blocks: blocks are a multiple of 10 bytes apart
          sent += n;
          ctx.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(block, 0, n))).addListener(f -> {
            if (!f.isSuccess()) {
              return;
            }
            bulkWritten.addAndGet(n);
            if (ctx.channel().isWritable()) {
              next();
            } else {
              ctx.pipeline().addFirst(new io.netty.channel.ChannelInboundHandlerAdapter() {
                @Override
                public void channelWritabilityChanged(ChannelHandlerContext c) {
                  if (c.channel().isWritable()) {
                    c.pipeline().remove(this);
                    next();
                  }
                  c.fireChannelWritabilityChanged();
                }
              });
            }
          });
        }
      };
    }

    private String usage(Map<String, String> d) {
      String[] pc = d.getOrDefault("usage", "10/0").split("/");
      long p = Long.parseLong(pc[0]);
      long c = Long.parseLong(pc[1]);
      return "{\"prompt_tokens\":" + p + ",\"total_tokens\":" + (p + 2) + ",\"completion_tokens\":2,"
          + "\"prompt_tokens_details\":{\"cached_tokens\":" + c + "}}";
    }

    private String completion(Map<String, String> d) {
      return "{\"id\":\"cmpl-1\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"" + model + "\","
          + "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hé from " + name + "\"},"
          + "\"finish_reason\":\"stop\"}],\"usage\":" + usage(d) + "}";
    }

    private void respond(ChannelHandlerContext ctx, HttpResponseStatus status, String body, FullHttpRequest req,
        Map<String, String> opts) {
      FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
          Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
      r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json")
          .setInt(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes())
          .set("x-fake-name", name)
          .set("keep-alive", "timeout=5");
      boolean close = "true".equals(opts.get("close"));
      if (close) {
        r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      }
      ChannelFuture f = ctx.writeAndFlush(r);
      if (close) {
        f.addListener(ChannelFutureListener.CLOSE);
      }
    }

    private void stream(ChannelHandlerContext ctx, Map<String, String> d, boolean keepAlive) {
      HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
      head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8")
          .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED)
          .set("x-fake-name", name);
      if (!keepAlive) {
        head.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      }
      ctx.writeAndFlush(head);
      int events = Integer.parseInt(d.getOrDefault("events", "3"));
      long interval = Long.parseLong(d.getOrDefault("interval-ms", "0"));
      int closeAfter = Integer.parseInt(d.getOrDefault("close-after", "-1"));
      int stallAfter = Integer.parseInt(d.getOrDefault("stall-after", "-1"));
      int partialAfter = Integer.parseInt(d.getOrDefault("partial-after", "-1"));
      long headDelay = Long.parseLong(d.getOrDefault("head-delay-ms", "0"));
      boolean trailer = d.containsKey("trailer");
      new Object() {
        int i;
        boolean finished;

        {
          ctx.channel().closeFuture().addListener(f -> {
            if (!finished) {
              abortedStreams.incrementAndGet();
            }
          });
          if (headDelay > 0) {
            ctx.executor().schedule(this::next, headDelay, TimeUnit.MILLISECONDS);
          } else {
            next();
          }
        }

        void next() {
          if (!ctx.channel().isActive()) {
            return;
          }
          if (i == stallAfter) {
            return;
          }
          if (i == partialAfter) {
            ctx.writeAndFlush(new DefaultHttpContent(Unpooled.copiedBuffer("data: {\"id\":\"c\",\"object\":\"chat.compl",
                StandardCharsets.UTF_8))).addListener(f -> partialsWritten.incrementAndGet());
            return;
          }
          if (i == closeAfter) {
            finished = true;
            ctx.close();
            return;
          }
          if (i < events) {
            String ev = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
                + "\"delta\":{\"content\":\" wörd" + i + "\"},\"finish_reason\":null}]}\n\n";
            i++;
            ctx.writeAndFlush(new DefaultHttpContent(Unpooled.copiedBuffer(ev, StandardCharsets.UTF_8)))
                .addListener(f -> {
                  if (interval > 0) {
                    ctx.executor().schedule(this::next, interval, TimeUnit.MILLISECONDS);
                  } else {
                    next();
                  }
                });
            return;
          }
          finished = true;
          String tail = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":" + usage(d) + "}\n\n"
              + "data: [DONE]\n\n";
          LastHttpContent last = new DefaultLastHttpContent(Unpooled.copiedBuffer(tail, StandardCharsets.UTF_8));
          if (trailer) {
            last.trailingHeaders().set("x-trailer", "yes");
          }
          completedStreams.incrementAndGet();
          ChannelFuture f = ctx.writeAndFlush(last);
          if (!keepAlive) {
            f.addListener(ChannelFutureListener.CLOSE);
          }
        }
      };
    }
  }
}
