package dev.kvroute.engine.server;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
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
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A load client for the streaming-capacity figure in {@code docs/mock-engine.md}: keeps {@code
 * streams} SSE streams open against one mock engine (each a keep-alive connection sending one
 * streaming chat request after another), and measures the client-side inter-token gaps after a
 * warm-up. Not a test; run it with {@code java -cp ... dev.kvroute.engine.server.StreamLoadClient URL
 * STREAMS SECONDS MAX_TOKENS NOMINAL_ITL_MS}.
 */
public final class StreamLoadClient {
  private static final byte[] CONTENT_MARK = "\"delta\":{\"content\":".getBytes(StandardCharsets.US_ASCII);

  private final URI uri;
  private final int maxTokens;
  private final long warmupEnd;
  private final long end;
  private long[] gaps = new long[1 << 20];
  private int gapCount;
  private final AtomicLong tokens = new AtomicLong();
  private final AtomicLong requests = new AtomicLong();
  private final AtomicLong errors = new AtomicLong();

  private StreamLoadClient(URI uri, int maxTokens, long warmupEnd, long end) {
    this.uri = uri;
    this.maxTokens = maxTokens;
    this.warmupEnd = warmupEnd;
    this.end = end;
  }

  public static void main(String[] args) throws Exception {
    URI uri = URI.create(args[0]);
    int streams = Integer.parseInt(args[1]);
    int seconds = Integer.parseInt(args[2]);
    int maxTokens = Integer.parseInt(args[3]);
    double nominalMs = Double.parseDouble(args[4]);
    long start = System.nanoTime();
    long warmup = Math.max(5, seconds / 4);
    StreamLoadClient c = new StreamLoadClient(uri, maxTokens,
        start + TimeUnit.SECONDS.toNanos(warmup), start + TimeUnit.SECONDS.toNanos(warmup + seconds));
    EventLoopGroup group = new MultiThreadIoEventLoopGroup(1,
        Epoll.isAvailable() ? EpollIoHandler.newFactory() : NioIoHandler.newFactory());
    Bootstrap b = new Bootstrap().group(group)
        .channel(Epoll.isAvailable() ? EpollSocketChannel.class : NioSocketChannel.class)
        .option(ChannelOption.TCP_NODELAY, true)
        .handler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline().addLast(new HttpClientCodec()).addLast(c.new StreamHandler());
          }
        });
    SplittableRandom rnd = new SplittableRandom(1);
    long staggerNanos = TimeUnit.SECONDS.toNanos(2);
    for (int i = 0; i < streams; i++) {
      long delay = rnd.nextLong(staggerNanos);
      group.schedule(() -> b.connect(uri.getHost(), uri.getPort()).addListener(f -> {
        if (!f.isSuccess()) {
          c.errors.incrementAndGet();
        }
      }), delay, TimeUnit.NANOSECONDS);
    }
    // wait for the end of the measured window on the event loop's own timer
    group.schedule(() -> { }, Math.max(0, c.end - System.nanoTime()), TimeUnit.NANOSECONDS).sync();
    long measured = c.end - c.warmupEnd;
    long[] g = group.submit(() -> Arrays.copyOf(c.gaps, c.gapCount)).get();
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    Arrays.sort(g);
    double mean = Arrays.stream(g).average().orElse(Double.NaN) / 1e6;
    System.out.printf("streams=%d tokens/s=%.0f requests=%d errors=%d itl_ms mean=%.2f p50=%.2f p90=%.2f p99=%.2f max=%.2f"
            + " nominal=%.2f mean_within_10pct=%s p90_within_10pct=%s%n",
        streams, c.tokens.get() * 1e9 / measured, c.requests.get(), c.errors.get(), mean,
        pct(g, 0.50), pct(g, 0.90), pct(g, 0.99), g.length == 0 ? Double.NaN : g[g.length - 1] / 1e6,
        nominalMs, Math.abs(mean - nominalMs) <= 0.1 * nominalMs, pct(g, 0.90) <= 1.1 * nominalMs);
  }

  private static double pct(long[] sorted, double q) {
    return sorted.length == 0 ? Double.NaN : sorted[(int) Math.min(sorted.length - 1, q * sorted.length)] / 1e6;
  }

  /** One connection: sends a streaming request, reads its events, and sends the next. */
  private final class StreamHandler extends SimpleChannelInboundHandler<HttpObject> {
    private long lastToken;
    private int seq;

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      send(ctx.channel());
    }

    private void send(Channel ch) {
      if (System.nanoTime() >= end) {
        ch.close();
        return;
      }
      lastToken = 0;
      String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"stream " + ch.id().asShortText() + " request "
          + (seq++) + "\"}],\"max_tokens\":" + maxTokens + ",\"ignore_eos\":true,\"stream\":true}";
      ByteBuf content = Unpooled.copiedBuffer(body, StandardCharsets.UTF_8);
      FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST,
          "/v1/chat/completions", content);
      req.headers().set(HttpHeaderNames.HOST, uri.getHost());
      req.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
      HttpUtil.setContentLength(req, content.readableBytes());
      ch.writeAndFlush(req);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, HttpObject msg) {
      if (msg instanceof HttpResponse r && r.status().code() != 200) {
        errors.incrementAndGet();
      }
      if (msg instanceof HttpContent c) {
        ByteBuf buf = c.content();
        if (buf.isReadable() && contains(buf)) {
          long now = System.nanoTime();
          if (now >= warmupEnd && now < end) {
            tokens.incrementAndGet();
            if (lastToken != 0) {
              if (gapCount == gaps.length) {
                gaps = Arrays.copyOf(gaps, gaps.length * 2);
              }
              gaps[gapCount++] = now - lastToken;
            }
          }
          lastToken = now;
        }
        if (msg instanceof LastHttpContent) {
          requests.incrementAndGet();
          send(ctx.channel());
        }
      }
    }

    private boolean contains(ByteBuf buf) {
      int n = buf.readableBytes() - CONTENT_MARK.length;
      int base = buf.readerIndex();
      outer:
      for (int i = 0; i <= n && i < 200; i++) {
        for (int j = 0; j < CONTENT_MARK.length; j++) {
          if (buf.getByte(base + i + j) != CONTENT_MARK[j]) {
            continue outer;
          }
        }
        return true;
      }
      return false;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      errors.incrementAndGet();
      ctx.close();
    }
  }
}
