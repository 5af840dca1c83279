package dev.kvroute.proxy;

import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.DiscoveryConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.lang.System.Logger.Level;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs the proxy's request path on itself before the real server listens, so that its first
 * requests find the hot path compiled instead of interpreted: a throwaway proxy with the real
 * configuration's policy, tokenizer, index page size, limits and timeouts, in front of four zero-cost
 * backends in this process (they answer every chat completion at once, JSON or SSE, with usage), is
 * sent synthetic multi-turn chat requests of 2 to 25 KB over loopback until {@code requests} have
 * been answered and the JIT compilers have gone quiet, or {@code maxTime} has passed. The traffic
 * looks like a real router's where it matters to the compiler: every request ends with a message the
 * token cache has not seen (so the tokenizer's encoder runs, not only the cache), client and backend
 * connections are closed and reopened every {@value #REQUESTS_PER_CONNECTION} requests (accept,
 * pipeline set-up and upstream connect run too), and the backends' models and lengths are discovered
 * from {@code /v1/models} (so the length check runs). Everything it
 * started is closed before it returns; no request reaches a real backend, and nothing it routed stays
 * in the real server's index, token cache or metrics (they belong to the throwaway proxy).
 *
 * <p>Why: on a one-core router the JIT compiles on the core that serves, so a cold JVM answers its
 * first seconds of traffic several times slower than its steady rate ({@code docs/performance.md},
 * "Warm start"). The throwaway proxy listens on 127.0.0.1 on an ephemeral port, never on the real
 * one, so the real {@code /ready} turns 200 only after the warm-up.
 *
 * <p>Not thread-safe: call once, before starting the real server.
 */
public final class SelfWarmUp {
  private static final System.Logger LOG = System.getLogger(SelfWarmUp.class.getName());
  /** The model the zero-cost backends serve and the synthetic requests name. */
  static final String MODEL = "kvroute-warm-up";
  /** Client connections at once: as many as a load generator's or a gateway's pool (wrk's 32 in the harness). */
  private static final int CONNECTIONS = 32;
  /** One request in this many is a scrape or a probe (a GET of {@link #PROBES}), the rest chat completions. */
  static final int PROBE_EVERY = 250;
  /** What a Prometheus scrape and an orchestrator's probes ask for, in turn. */
  private static final String[] PROBES = {"/metrics", "/health", "/metrics", "/ready"};
  /** Requests a warm-up connection (client side) or a zero-cost backend connection serves before it is closed. */
  private static final int REQUESTS_PER_CONNECTION = 100;
  /** Zero-cost backends: enough for the policy to choose, balance and match. */
  private static final int BACKENDS = 4;
  private static final String[] WORDS = ("prefill decode cache block page token replica router prompt history "
      + "session turn model engine queue batch latency throughput memory layer attention adapter request stream")
      .split(" ");

  /**
   * What the warm-up did.
   *
   * @param requests chat completions answered 200 through the throwaway proxy
   * @param probes GETs of {@code /metrics}, {@code /health} and {@code /ready} answered 200 (one
   *     request in {@value #PROBE_EVERY})
   * @param failed requests answered otherwise or not at all
   * @param elapsed wall time, including starting and closing the throwaway proxy
   */
  public record Result(int requests, int probes, int failed, Duration elapsed) {}

  private SelfWarmUp() {}

  /**
   * Warms the request path up for {@code config}; returns at the latest about {@code maxTime} after
   * it is called.
   *
   * @param requests requests to answer (at least); {@code 0} does nothing
   * @param maxTime the longest the warm-up may take (more: it stops there, with fewer requests)
   * @throws IllegalArgumentException if {@code requests < 0} or {@code maxTime} is not positive
   */
  public static Result run(ProxyConfig config, int requests, Duration maxTime) {
    if (requests < 0) {
      throw new IllegalArgumentException("requests: " + requests + " (expected: >= 0)");
    }
    if (maxTime.isNegative() || maxTime.isZero()) {
      throw new IllegalArgumentException("maxTime: " + maxTime + " (expected: > 0)");
    }
    long start = System.nanoTime();
    if (requests == 0) {
      return new Result(0, 0, 0, Duration.ZERO);
    }
    long deadline = start + maxTime.toNanos();
    Transport transport = Transport.best();
    EventLoopGroup backendLoop = transport.group(1);
    KvrouteServer proxy = null;
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger probes = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    try {
      ServerBootstrap backends = new ServerBootstrap()
          .group(backendLoop)
          .channel(transport.serverChannel())
          .childHandler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
              ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(64 << 20), new ZeroCostBackend());
            }
          });
      List<URI> urls = new ArrayList<>();
      for (int i = 0; i < BACKENDS; i++) {
        Channel backend = backends.bind("127.0.0.1", 0).syncUninterruptibly().channel();
        urls.add(URI.create("http://127.0.0.1:" + ((InetSocketAddress) backend.localAddress()).getPort()));
      }
      proxy = KvrouteServer.start(throwaway(config, urls));
      drive(backendLoop, transport, proxy.uri(), requests, deadline, ok, probes, failed);
    } catch (RuntimeException e) {
      // a warm-up that cannot run leaves a cold start, not a failed one
      LOG.log(Level.WARNING, "warm-up stopped: " + e);
    } finally {
      if (proxy != null) {
        proxy.close();
      }
      backendLoop.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }
    Result r = new Result(ok.get(), probes.get(), failed.get(), Duration.ofNanos(System.nanoTime() - start));
    LOG.log(Level.INFO, "warm-up: {0} requests and {1} probes ({2} failed) in {3} ms", r.requests(), r.probes(),
        r.failed(), r.elapsed().toMillis());
    return r;
  }

  /**
   * The real configuration with what must not leak out of the warm-up replaced: loopback on an
   * ephemeral port, no admin listener, no discovery, no KV-event subscriptions, no mock fleet, and
   * the zero-cost backends as the only backends, and a {@code /tokenize} deadline of at least
   * {@link #WARM_UP_TOKENIZE_DEADLINE}.
   */
  /** The throwaway proxy's {@code /tokenize} deadline at least (its backends answer at once once warm). */
  static final Duration WARM_UP_TOKENIZE_DEADLINE = Duration.ofSeconds(10);

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  static ProxyConfig throwaway(ProxyConfig config, List<URI> backends) {
    long capacity = config.routing().defaultCapacityTokens();
    List<BackendConfig> list = new ArrayList<>();
    for (int i = 0; i < backends.size(); i++) {
      // served models discovered from /v1/models, as a real engine's are: its max_model_len turns the
      // length check on, which a configured model list (no length) would leave cold
      list.add(new BackendConfig(backends.get(i), "warm-up-" + i, capacity));
    }
    return config
        .withBind("127.0.0.1")
        .withPort(0)
        .withAdminPort(-1)
        .withMockBackends(0)
        .withDiscovery(DiscoveryConfig.off())
        .withIndex(config.index().withMode("approximate"))
        // a cold JVM may take longer than the real deadline: without this the engine tokenizer falls
        // back and logs a WARN naming a warm-up-N backend at every start
        .withRouting(config.routing().withEngineTokenizer(
            max(config.routing().tokenizerTimeout(), WARM_UP_TOKENIZE_DEADLINE), config.routing().tokenizerReuse()))
        .withBackends(list);
  }

  /**
   * Sends requests over {@value #CONNECTIONS} keep-alive connections until {@code requests} are
   * answered and the JIT has been idle for 200 ms, or until {@code deadline}. One request in
   * {@value #PROBE_EVERY} is a GET of {@code /metrics}, {@code /health} or {@code /ready}: the
   * Prometheus exposition and the probes run on a real router every few seconds, and left cold they
   * were compiled after {@code /ready} (the Prometheus text writer's C2 compilation alone took 0.3 s
   * of the one core).
   *
   * <p>The client is Netty's ({@code HttpClientCodec} and {@code HttpObjectAggregator}) on the
   * zero-cost backends' event loop, not the JDK's {@code HttpClient}: on a one-core router the client
   * shares the core with the proxy and the JIT, and the JDK client (its own threads, its own code to
   * interpret and compile) took most of it, so 15 s gave only about 2,000 requests, too few for the
   * compiler to reach the request path's C2 tier (HotSpot compiles a method at about 5,000 calls). The
   * Netty client runs code the proxy's upstream side runs too, so compiling it is not wasted.
   */
  private static void drive(EventLoopGroup loop, Transport transport, URI proxy, int requests, long deadline,
      AtomicInteger ok, AtomicInteger probes, AtomicInteger failed) {
    List<byte[]> bodies = bodies();
    String host = proxy.getHost() + ":" + proxy.getPort();
    AtomicLong next = new AtomicLong();
    CountDownLatch done = new CountDownLatch(CONNECTIONS);
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    boolean jitTimed = jit != null && jit.isCompilationTimeMonitoringSupported();
    long[] jitQuietSince = {0};
    long[] lastJitMillis = {-1};
    java.util.function.Supplier<FullHttpRequest> nextRequest = () -> {
      if (System.nanoTime() >= deadline) {
        return null;
      }
      long n = next.getAndIncrement();
      if (n >= requests && (!jitTimed || jitQuiet(jit, lastJitMillis, jitQuietSince))) {
        return null;
      }
      if (n % PROBE_EVERY == PROBE_EVERY / 2) {
        FullHttpRequest probe = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET,
            PROBES[(int) (n / PROBE_EVERY % PROBES.length)], Unpooled.EMPTY_BUFFER);
        probe.headers().set(HttpHeaderNames.HOST, host).setInt(HttpHeaderNames.CONTENT_LENGTH, 0);
        return probe;
      }
      byte[] body = withNewMessage(bodies.get((int) (n % bodies.size())), n);
      FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/chat/completions",
          Unpooled.wrappedBuffer(body));
      req.headers().set(HttpHeaderNames.HOST, host)
          .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
          .setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
      return req;
    };
    Runnable[] reconnect = {null};
    Bootstrap client = new Bootstrap()
        .group(loop)
        .channel(transport.channel())
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5_000)
        .handler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(1 << 20),
                new WarmUpClient(nextRequest, ok, probes, failed, done, reconnect[0]));
          }
        });
    reconnect[0] = () -> client.connect(proxy.getHost(), proxy.getPort()).addListener((ChannelFutureListener) f -> {
      if (!f.isSuccess()) {
        failed.incrementAndGet();
        done.countDown();
      }
    });
    for (int c = 0; c < CONNECTIONS; c++) {
      reconnect[0].run();
    }
    try {
      done.await(Math.max(0, deadline - System.nanoTime()) + TimeUnit.SECONDS.toNanos(11), TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * One keep-alive connection of the warm-up's client: sends a request, and the next when the answer
   * is complete, until {@code nextRequest} has none; then closes. A connection that fails or stalls
   * past the proxy's own timeouts is closed by them and counts as done.
   */
  private static final class WarmUpClient extends SimpleChannelInboundHandler<FullHttpResponse> {
    private final java.util.function.Supplier<FullHttpRequest> nextRequest;
    private final AtomicInteger ok;
    private final AtomicInteger probes;
    private final AtomicInteger failed;
    private final CountDownLatch done;
    private final Runnable reconnect;
    private int answered;
    private boolean recycled;
    private boolean counted;
    /** Whether the request in flight is a GET (a scrape or a probe), not a completion. */
    private boolean probing;

    WarmUpClient(java.util.function.Supplier<FullHttpRequest> nextRequest, AtomicInteger ok, AtomicInteger probes,
        AtomicInteger failed, CountDownLatch done, Runnable reconnect) {
      this.nextRequest = nextRequest;
      this.ok = ok;
      this.probes = probes;
      this.failed = failed;
      this.done = done;
      this.reconnect = reconnect;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
      send(ctx);
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse resp) {
      (resp.status().code() != 200 ? failed : probing ? probes : ok).incrementAndGet();
      if (++answered >= REQUESTS_PER_CONNECTION) {
        // a new connection in its place: accepting and setting up connections is on the path too
        // (a load balancer or a client pool opens them all the time)
        recycled = true;
        ctx.close();
      } else if (HttpUtil.isKeepAlive(resp)) {
        send(ctx);
      } else {
        ctx.close();
      }
    }

    private void send(ChannelHandlerContext ctx) {
      FullHttpRequest req = nextRequest.get();
      if (req == null) {
        ctx.close();
        return;
      }
      probing = req.method().equals(HttpMethod.GET);
      ctx.writeAndFlush(req).addListener((ChannelFutureListener) f -> {
        if (!f.isSuccess()) {
          f.channel().close();
        }
      });
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      failed.incrementAndGet();
      ctx.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (recycled) {
        reconnect.run();
        return;
      }
      if (!counted) {
        counted = true;
        done.countDown();
      }
    }
  }

  /** Whether the JIT compilers' total time has not grown for 200 ms (checked by every caller). */
  private static synchronized boolean jitQuiet(CompilationMXBean jit, long[] last, long[] quietSince) {
    long now = System.nanoTime();
    long millis = jit.getTotalCompilationTime();
    if (millis != last[0]) {
      last[0] = millis;
      quietSince[0] = now;
      return false;
    }
    return now - quietSince[0] >= TimeUnit.MILLISECONDS.toNanos(200);
  }

  /**
   * 64 chat bodies: 16 sessions of 4 turns on a long system prompt and a growing history (2 to
   * 25 KB), every fourth streamed, so the policy sees shared prefixes and both relay paths run.
   */
  static List<byte[]> bodies() {
    SplittableRandom r = new SplittableRandom(18);
    List<byte[]> out = new ArrayList<>();
    for (int s = 0; s < 16; s++) {
      StringBuilder history = new StringBuilder("[{\"role\":\"system\",\"content\":\"You are assistant " + s + ". ")
          .append(text(r, 300)).append("\"}");
      for (int t = 0; t < 2 * s; t++) {
        history.append(",{\"role\":\"").append(t % 2 == 0 ? "user" : "assistant").append("\",\"content\":\"")
            .append(text(r, 150)).append("\"}");
      }
      for (int turn = 0; turn < 4; turn++) {
        history.append(",{\"role\":\"user\",\"content\":\"").append(text(r, 80)).append("\"}");
        String body = "{\"model\":\"" + MODEL + "\",\"max_tokens\":16,\"stream\":" + (turn == 3)
            + ",\"messages\":" + history + "]}";
        out.add(body.getBytes(StandardCharsets.UTF_8));
        history.append(",{\"role\":\"assistant\",\"content\":\"").append(text(r, 40)).append("\"}");
      }
    }
    return out;
  }

  /**
   * {@code body} (one of {@link #bodies}) with a new user message of 20 words at the end of its
   * messages, different for every {@code n}: as in real traffic, each request brings text the token
   * cache has not seen, so the tokenizer's encoder is compiled too, not only the cache's hits.
   */
  static byte[] withNewMessage(byte[] body, long n) {
    byte[] tail = (",{\"role\":\"user\",\"content\":\"" + text(new SplittableRandom(n), 20) + "\"}]}")
        .getBytes(StandardCharsets.UTF_8);
    int keep = body.length - 2; // the body ends with the messages' "]" and the object's "}"
    byte[] out = java.util.Arrays.copyOf(body, keep + tail.length);
    System.arraycopy(tail, 0, out, keep, tail.length);
    return out;
  }

  private static String text(SplittableRandom r, int words) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < words; i++) {
      if (i > 0) {
        sb.append(i % 37 == 0 ? "\\n" : " ");
      }
      sb.append(WORDS[r.nextInt(WORDS.length)]).append(r.nextInt(1000));
    }
    return sb.toString();
  }

  /**
   * Answers like a vLLM server at zero cost: {@code /health}, {@code /v1/models} (one model,
   * {@value #MODEL}), a {@code /metrics} of an idle engine, and every other request a completion of one token
   * with usage, as JSON or (when the body asks to stream) as SSE with a usage chunk and {@code [DONE]}.
   */
  private static final class ZeroCostBackend extends SimpleChannelInboundHandler<FullHttpRequest> {
    /** Completions answered on this connection; every {@value #REQUESTS_PER_CONNECTION}th closes it. */
    private int answered;

    private static final byte[] MODELS = ("{\"object\":\"list\",\"data\":[{\"id\":\"" + MODEL
        + "\",\"object\":\"model\",\"owned_by\":\"vllm\",\"max_model_len\":131072}]}").getBytes(StandardCharsets.UTF_8);
    /** An idle engine's load, so that load scraping reads it (and logs no warning about it). */
    private static final byte[] METRICS = ("vllm:num_requests_running{model_name=\"" + MODEL + "\"} 0.0\n"
        + "vllm:num_requests_waiting{model_name=\"" + MODEL + "\"} 0.0\n").getBytes(StandardCharsets.UTF_8);
    private static final byte[] COMPLETION = ("{\"id\":\"chatcmpl-0\",\"object\":\"chat.completion\",\"created\":1,"
        + "\"model\":\"" + MODEL + "\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},"
        + "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5000,\"completion_tokens\":1,"
        + "\"total_tokens\":5001,\"prompt_tokens_details\":{\"cached_tokens\":0}}}").getBytes(StandardCharsets.UTF_8);
    private static final byte[] CHUNK = ("data: {\"id\":\"chatcmpl-0\",\"object\":\"chat.completion.chunk\",\"created\":1,"
        + "\"model\":\"" + MODEL + "\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n")
        .getBytes(StandardCharsets.UTF_8);
    private static final byte[] USAGE = ("data: {\"id\":\"chatcmpl-0\",\"object\":\"chat.completion.chunk\",\"created\":1,"
        + "\"model\":\"" + MODEL + "\",\"choices\":[],\"usage\":{\"prompt_tokens\":5000,\"completion_tokens\":1,"
        + "\"total_tokens\":5001,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\ndata: [DONE]\n\n")
        .getBytes(StandardCharsets.UTF_8);

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
      String path = req.uri();
      if (path.startsWith("/v1/models")) {
        full(ctx, "application/json", MODELS);
      } else if (path.startsWith("/metrics")) {
        full(ctx, "text/plain; version=0.0.4", METRICS);
      } else if (path.startsWith("/health")) {
        full(ctx, "text/plain", new byte[0]);
      } else if (path.startsWith("/tokenize")) {
        full(ctx, "application/json", tokens(req)); // --tokenizer engine warms up too
      } else if (req.content().toString(StandardCharsets.UTF_8).contains("\"stream\":true")) {
        HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
        head.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
            .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
        ctx.write(head);
        ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(CHUNK)));
        ctx.writeAndFlush(new io.netty.handler.codec.http.DefaultLastHttpContent(Unpooled.wrappedBuffer(USAGE)));
      } else if (++answered % REQUESTS_PER_CONNECTION == 0) {
        // the proxy then opens a new upstream connection, as after an engine's keep-alive limit
        ByteBuf content = Unpooled.wrappedBuffer(COMPLETION);
        FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, content);
        r.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json")
            .setInt(HttpHeaderNames.CONTENT_LENGTH, COMPLETION.length)
            .set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
      } else {
        full(ctx, "application/json", COMPLETION);
      }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close(); // the proxy reset the connection (it closes its pool at the end): nothing to report
    }

    /** A {@code /tokenize} answer: one made-up token per 4 bytes of the body, the same for the same bytes. */
    private static byte[] tokens(FullHttpRequest req) {
      ByteBuf body = req.content();
      StringBuilder sb = new StringBuilder("{\"count\":0,\"max_model_len\":131072,\"tokens\":[");
      for (int i = body.readerIndex(); i + 4 <= body.writerIndex(); i += 4) {
        sb.append(i == body.readerIndex() ? "" : ",").append(body.getInt(i) & 0xffff);
      }
      if (body.readableBytes() < 4) {
        sb.append('0');
      }
      return sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
    }

    private static void full(ChannelHandlerContext ctx, String type, byte[] body) {
      ByteBuf content = Unpooled.wrappedBuffer(body);
      FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, content);
      r.headers().set(HttpHeaderNames.CONTENT_TYPE, type).setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
      ctx.writeAndFlush(r);
    }
  }
}
