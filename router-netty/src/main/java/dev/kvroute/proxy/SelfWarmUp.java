package dev.kvroute.proxy;

import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.DiscoveryConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
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
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Runs the proxy's request path on itself before the real server listens, so that its first
 * requests find the hot path compiled instead of interpreted: a throwaway proxy with the real
 * configuration's policy, tokenizer, index page size, limits and timeouts, in front of four zero-cost
 * backends in this process (they answer every chat completion at once, JSON or SSE, with usage), is
 * sent synthetic multi-turn chat requests of 2 to 25 KB over loopback until {@code requests} have
 * been answered and the JIT's optimizing compiler has little left to do ({@link JitQuiet}), or
 * {@code maxTime} has passed; then a second, fresh throwaway proxy gets a quarter as many, so that the
 * branches only a new server takes (its first meters, decisions and connections, no engine load
 * scraped yet) run in compiled code and are compiled in before {@code /ready}, not after it. The
 * traffic looks like a real router's where it matters to the compiler: two requests in three end
 * with a message the token cache has not seen (so the tokenizer's encoder runs; one in 48 a long
 * one, routed off the event loop), the third is a turn sent again (any of them: the whole prompt
 * cached and matched), later turns extend earlier ones, and half the new messages go on with the
 * conversation the request before started; bodies compact
 * and spaced as Python's {@code json.dumps} writes them, with and without {@code stream}; request
 * headers in lower case and capitalized, reply headers as uvicorn and as nginx spell them; streamed
 * replies in several chunks; client and backend connections are closed and reopened every {@value
 * #REQUESTS_PER_CONNECTION} requests (accept, pipeline set-up and upstream connect run too), every
 * other client connection leaving with one last request unanswered (a client gone mid-exchange), and the
 * backends' models and lengths are discovered from {@code /v1/models} (so the length check runs).
 * Everything it started is closed before it returns; no request reaches a real backend, and nothing
 * it routed stays in the real server's index, token cache or metrics (they belong to the throwaway
 * proxies).
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
  static final int REQUESTS_PER_CONNECTION = 100;
  /**
   * How each client connection ends, in turn: answered, or gone with one request in flight at once
   * or 200 µs after writing it (closing before, during and after the proxy's exchange).
   */
  private static final long[] ABANDON_AFTER_MICROS = {-1, 0, -1, 200};
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
    return run(config, requests, maxTime, JitQuiet::forThisJvm);
  }

  /** {@link #run(ProxyConfig, int, Duration)} with each phase's end told by a new {@code quiet}. */
  static Result run(ProxyConfig config, int requests, Duration maxTime, java.util.function.Supplier<JitQuiet> quiet) {
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
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger probes = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    try {
      List<URI> urls = new ArrayList<>();
      for (int i = 0; i < BACKENDS; i++) {
        // half the backends spell their reply headers as vLLM's uvicorn does, half as nginx or Envoy
        ZeroCostBackend.ReplyStyle style = i % 2 == 0 ? ZeroCostBackend.ReplyStyle.UVICORN : ZeroCostBackend.ReplyStyle.NGINX;
        // one engine reports requests waiting, the others idle (ZeroCostBackend)
        boolean busy = i == BACKENDS - 1;
        Channel backend = new ServerBootstrap()
            .group(backendLoop)
            .channel(transport.serverChannel())
            .childHandler(new ChannelInitializer<SocketChannel>() {
              @Override
              protected void initChannel(SocketChannel ch) {
                ch.pipeline().addLast(new HttpServerCodec(), new HttpObjectAggregator(64 << 20), new ZeroCostBackend(style, busy));
              }
            })
            .bind("127.0.0.1", 0).syncUninterruptibly().channel();
        urls.add(URI.create("http://127.0.0.1:" + ((InetSocketAddress) backend.localAddress()).getPort()));
      }
      // the first proxy until the request path is compiled; then a fresh one, whose first requests
      // take the branches only a new server takes (first meters, first decision, no engine load
      // scraped yet, new connections) in compiled code, so that they deoptimize and are compiled
      // again here rather than after /ready
      // (the first may take three quarters of maxTime at most, so that the second runs even when a
      // busy core cuts the first short)
      int[] phases = {requests, Math.max(1, requests / 4)};
      long[] ends = {start + maxTime.toNanos() / 4 * 3, deadline};
      for (int phase = 0; phase < phases.length && System.nanoTime() < deadline; phase++) {
        long phaseStart = System.nanoTime();
        int before = ok.get() + probes.get() + failed.get();
        KvrouteServer proxy = KvrouteServer.start(throwaway(config, urls));
        try {
          drive(backendLoop, transport, proxy.uri(), phases[phase], ends[phase], ok, probes, failed, quiet.get());
        } finally {
          proxy.close();
        }
        LOG.log(Level.DEBUG, "warm-up phase {0}: {1} answers in {2} ms", phase + 1,
            ok.get() + probes.get() + failed.get() - before, (System.nanoTime() - phaseStart) / 1_000_000);
      }
    } catch (RuntimeException e) {
      // a warm-up that cannot run leaves a cold start, not a failed one
      LOG.log(Level.WARNING, "warm-up stopped: " + e);
    } finally {
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
   * answered and {@code quiet} says the JIT has finished with them, or until {@code deadline}. One
   * request in {@value #PROBE_EVERY} is a GET of {@code /metrics}, {@code /health} or {@code /ready}:
   * the Prometheus exposition and the probes run on a real router every few seconds, and left cold
   * they were compiled after {@code /ready} (the Prometheus text writer's C2 compilation alone took
   * 0.3 s of the one core).
   *
   * <p>The client is Netty's ({@code HttpClientCodec} and {@code HttpObjectAggregator}) on the
   * zero-cost backends' event loop, not the JDK's {@code HttpClient}: on a one-core router the client
   * shares the core with the proxy and the JIT, and the JDK client (its own threads, its own code to
   * interpret and compile) took most of it, so 15 s gave only about 2,000 requests, too few for the
   * compiler to reach the request path's C2 tier (HotSpot compiles a method at about 5,000 calls). The
   * Netty client runs code the proxy's upstream side runs too, so compiling it is not wasted.
   */
  private static void drive(EventLoopGroup loop, Transport transport, URI proxy, int requests, long deadline,
      AtomicInteger ok, AtomicInteger probes, AtomicInteger failed, JitQuiet quiet) {
    // hold back while C2 has a backlog only where it shares the one core with the traffic
    boolean oneCore = Runtime.getRuntime().availableProcessors() < 2;
    AtomicBoolean holdBack = new AtomicBoolean();
    List<WarmUpBody> bodies = bodies();
    String host = proxy.getHost() + ":" + proxy.getPort();
    AtomicLong next = new AtomicLong();
    AtomicBoolean stop = new AtomicBoolean();
    CountDownLatch done = new CountDownLatch(CONNECTIONS);
    java.util.function.BiFunction<Long, HeaderStyle, FullHttpRequest> nextRequest = (n, style) -> {
      if (stop.get() || System.nanoTime() >= deadline) {
        return null;
      }
      if (n % PROBE_EVERY == PROBE_EVERY / 2) {
        FullHttpRequest probe = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.GET,
            PROBES[(int) (n / PROBE_EVERY % PROBES.length)], Unpooled.EMPTY_BUFFER);
        style.headers(probe.headers(), host, -1);
        return probe;
      }
      byte[] body = body(bodies, n);
      FullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.POST, "/v1/chat/completions",
          Unpooled.wrappedBuffer(body));
      style.headers(req.headers(), host, body.length);
      return req;
    };
    AtomicInteger opened = new AtomicInteger();
    Runnable[] reconnect = {null};
    Bootstrap client = new Bootstrap()
        .group(loop)
        .channel(transport.channel())
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 5_000)
        .handler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            int n = opened.getAndIncrement();
            HeaderStyle style = HeaderStyle.values()[n % HeaderStyle.values().length];
            ch.pipeline().addLast(new HttpClientCodec(), new HttpObjectAggregator(1 << 20),
                new WarmUpClient(() -> nextRequest.apply(next.getAndIncrement(), style), holdBack, ok, probes, failed,
                    done, reconnect[0], ABANDON_AFTER_MICROS[n % ABANDON_AFTER_MICROS.length]));
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
    int first = ok.get() + probes.get() + failed.get();
    try {
      while (!done.await(QUIET_POLL_MILLIS, TimeUnit.MILLISECONDS)) {
        int answered = ok.get() + probes.get() + failed.get() - first;
        if (System.nanoTime() >= deadline + TimeUnit.SECONDS.toNanos(11)) {
          break; // the proxy's own timeouts close a stalled connection well before this
        }
        if (quiet.poll(answered, System.nanoTime()) && answered >= requests) {
          stop.set(true);
        }
        holdBack.set(oneCore && quiet.backlogged() && !stop.get() && System.nanoTime() < deadline);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      holdBack.set(false);
    }
  }

  /** How often the warm-up asks whether the JIT is quiet. */
  private static final long QUIET_POLL_MILLIS = 50;
  /** How long a held-back connection waits before it asks again (see {@link JitQuiet#backlogged()}). */
  private static final long HOLD_BACK_MILLIS = 5;

  /**
   * One keep-alive connection of the warm-up's client: sends a request, and the next when the answer
   * is complete, until {@code nextRequest} has none; then closes. A connection that fails or stalls
   * past the proxy's own timeouts is closed by them and counts as done.
   */
  private static final class WarmUpClient extends SimpleChannelInboundHandler<FullHttpResponse> {
    private final java.util.function.Supplier<FullHttpRequest> nextRequest;
    private final AtomicBoolean holdBack;
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
    /**
     * Whether this connection, at its end, sends one more request and closes without its answer:
     * {@code < 0} no, else that many microseconds after the request is written.
     */
    private final long abandonAfterMicros;

    WarmUpClient(java.util.function.Supplier<FullHttpRequest> nextRequest, AtomicBoolean holdBack, AtomicInteger ok,
        AtomicInteger probes, AtomicInteger failed, CountDownLatch done, Runnable reconnect,
        long abandonAfterMicros) {
      this.abandonAfterMicros = abandonAfterMicros;
      this.nextRequest = nextRequest;
      this.holdBack = holdBack;
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
      if (recycled) {
        return; // an abandoned request answered before its connection closed: nothing more to send
      }
      if (++answered >= REQUESTS_PER_CONNECTION) {
        // a new connection in its place: accepting and setting up connections is on the path too
        // (a load balancer or a client pool opens them all the time)
        recycled = true;
        FullHttpRequest last = abandonAfterMicros >= 0 ? nextRequest.get() : null;
        if (last != null) {
          // gone with a request in flight, as a client that times out, a cancelled stream or a load
          // generator at the end of its run: the proxy's paths for a client that left mid-exchange
          // (the reply written to a closed channel, the lease released early) run here, not first
          // after /ready, where deoptimizing them cost the one core its biggest C2 recompilations
          probing = last.method().equals(HttpMethod.GET);
          ctx.writeAndFlush(last).addListener((ChannelFutureListener) f -> {
            if (abandonAfterMicros == 0) {
              f.channel().close(); // before the proxy has read it, or forwarded it
            } else { // while the backend answers or the proxy writes the answer
              f.channel().eventLoop().schedule(() -> f.channel().close(), abandonAfterMicros, TimeUnit.MICROSECONDS);
            }
          });
        } else {
          ctx.close();
        }
      } else if (HttpUtil.isKeepAlive(resp)) {
        send(ctx);
      } else {
        ctx.close();
      }
    }

    private void send(ChannelHandlerContext ctx) {
      if (holdBack.get()) {
        ctx.executor().schedule(() -> send(ctx), HOLD_BACK_MILLIS, TimeUnit.MILLISECONDS);
        return;
      }
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

  /**
   * How a client spells its request headers: HTTP header names are case-insensitive, and the proxy's
   * header code takes other branches for other spellings, so the warm-up sends the common ones (one
   * per connection, in turn).
   */
  enum HeaderStyle {
    /** Lower case, as Python's httpx (the OpenAI SDK's transport), h2 clients and Netty's constants. */
    LOWER {
      @Override
      void headers(HttpHeaders h, String host, int length) {
        h.set(HttpHeaderNames.HOST, host).set(HttpHeaderNames.ACCEPT, "application/json")
            .set(HttpHeaderNames.USER_AGENT, "OpenAI/Python 1.54.0").set(HttpHeaderNames.AUTHORIZATION, "Bearer EMPTY");
        body(h, HttpHeaderNames.CONTENT_TYPE, HttpHeaderNames.CONTENT_LENGTH, length);
      }
    },
    /** Capitalized words and nothing else, as curl, wrk and most load generators. */
    CAPITALIZED {
      @Override
      void headers(HttpHeaders h, String host, int length) {
        h.set("Host", host);
        body(h, "Content-Type", "Content-Length", length);
      }
    },
    /** Capitalized, with the headers a gateway adds in front of a router. */
    GATEWAY {
      @Override
      void headers(HttpHeaders h, String host, int length) {
        h.set("Host", host).set("User-Agent", "Go-http-client/1.1").set("Accept", "*/*")
            .set("X-Forwarded-For", "10.0.0.7").set("X-Request-Id", "warm-up").set("Accept-Encoding", "gzip");
        body(h, "Content-Type", "Content-Length", length);
      }
    };

    abstract void headers(HttpHeaders h, String host, int length);

    /** The body's headers (none for a GET: {@code length < 0}). */
    private static void body(HttpHeaders h, CharSequence type, CharSequence contentLength, int length) {
      if (length >= 0) {
        h.set(type, HttpHeaderValues.APPLICATION_JSON).setInt(contentLength, length);
      }
    }
  }

  /** One of {@link #bodies}: its bytes, and whether they are spaced as Python's {@code json.dumps} writes. */
  record WarmUpBody(byte[] bytes, boolean spaced) {}

  /**
   * 64 chat bodies: 16 sessions of 4 turns on a long system prompt and a growing history (2 to
   * 25 KB), so the policy sees shared prefixes and later turns extend earlier ones, and both relay
   * paths run. Written as clients write them: every other session spaced as Python's {@code
   * json.dumps} ({@code ", "} and {@code ": "}), the others compact; {@code stream} true on a
   * session's last turn, false on its first, absent on the others; some with sampling parameters and
   * a {@code user}; {@code max_tokens} of 2 to 4 digits.
   */
  static List<WarmUpBody> bodies() {
    SplittableRandom r = new SplittableRandom(18);
    List<WarmUpBody> out = new ArrayList<>();
    for (int s = 0; s < 16; s++) {
      boolean spaced = s % 2 == 1;
      String c = spaced ? ", " : ",";
      String k = spaced ? "\": " : "\":";
      StringBuilder history = new StringBuilder("[{\"role" + k + "\"system\"" + c + "\"content" + k + "\"You are assistant ")
          .append(s).append(". ").append(text(r, 300)).append("\"}");
      for (int t = 0; t < 2 * s; t++) {
        history.append(c).append(message(t % 2 == 0 ? "user" : "assistant", text(r, 150), spaced));
      }
      for (int turn = 0; turn < 4; turn++) {
        history.append(c).append(message("user", text(r, 80), spaced));
        StringBuilder body = new StringBuilder("{\"model" + k + "\"" + MODEL + "\"" + c + "\"messages" + k)
            .append(history).append("]");
        body.append(c).append("\"max_tokens" + k).append(s % 3 == 0 ? 16 : s % 3 == 1 ? 256 : 1024);
        if (turn == 3 || turn == 0) {
          body.append(c).append("\"stream" + k).append(turn == 3);
        }
        if (s % 4 == 2) {
          body.append(c).append("\"temperature" + k + "0.7").append(c).append("\"top_p" + k + "0.95");
        } else if (s % 4 == 3) {
          body.append(c).append("\"user" + k + "\"session-").append(s).append("\"");
        }
        out.add(new WarmUpBody(body.append("}").toString().getBytes(StandardCharsets.UTF_8), spaced));
        history.append(c).append(message("assistant", text(r, 40), spaced));
      }
    }
    return out;
  }

  private static String message(String role, String content, boolean spaced) {
    String k = spaced ? "\": " : "\":";
    return "{\"role" + k + "\"" + role + "\"" + (spaced ? ", " : ",") + "\"content" + k + "\"" + content + "\"}";
  }

  /**
   * One in this many of the requests that bring a new message to a body ({@code n % 3 == 1}) brings a
   * long one, whose routing runs off the event loop: one chat request in 48.
   */
  static final int COLD_EVERY = 16;
  /** Words of such a message: more than {@link ProxyHandler#COLD_TEXT_CODE_POINTS} code points. */
  static final int COLD_WORDS = ProxyHandler.COLD_TEXT_CODE_POINTS / 6;

  /**
   * The body of the warm-up's {@code n}th chat request, from {@code bodies} ({@link #bodies}). One in
   * three is a turn sent again as it was (a retry, a regenerate, a load generator's fixed set: its
   * whole prompt in the token cache and in the index), chosen by a hash of {@code n}, so that what
   * it finds is at any place in the caches' recency order, as with real clients (a warm-up that
   * always found the least recent left that branch to the first seconds after {@code /ready}). One
   * in {@code 3 × }{@value #COLD_EVERY} ends with a new message of {@value #COLD_WORDS} words, so that its
   * routing, tokenizing included, runs on the body workers while the event loop routes the others
   * (the off-loop path and the prefix index's lock taken by two threads, as in a real router's first
   * seconds, when every new conversation is cold). The rest end with a new message of 20 words; of
   * those, the ones after a request with a new message ({@code n % 3 == 2}) go on with that request's
   * conversation (its body and message, then one more), so the kept prompt a turn extends was itself
   * an extension, held in several arrays ({@code SegmentedTokens}), as a conversation's third turn
   * finds it (a warm-up whose kept prompts were all one array left that branch to the first seconds).
   */
  static byte[] body(List<WarmUpBody> bodies, long n) {
    if (n % 3 == 0) {
      long h = (n + 1) * 0x9E3779B97F4A7C15L;
      return bodies.get((int) ((h >>> 33) % bodies.size())).bytes();
    }
    if (n % 3 == 2) {
      WarmUpBody before = bodies.get((int) ((n - 1) % bodies.size()));
      WarmUpBody previous = new WarmUpBody(withNewMessage(before, n - 1, newWords(n - 1)), before.spaced());
      return withNewMessage(previous, n, 20);
    }
    return withNewMessage(bodies.get((int) (n % bodies.size())), n, newWords(n));
  }

  /** Words of request {@code n}'s new message: {@value #COLD_WORDS} if {@code n % }{@value #COLD_EVERY}{@code  == 1}, else 20. */
  private static int newWords(long n) {
    return n % COLD_EVERY == 1 ? COLD_WORDS : 20;
  }

  /**
   * {@code body} (one of {@link #bodies}) with a new user message of 20 words at the end of its
   * messages, different for every {@code n}: as in real traffic, each request brings text the token
   * cache has not seen, so the tokenizer's encoder is compiled too, not only the cache's hits.
   */
  static byte[] withNewMessage(WarmUpBody body, long n) {
    return withNewMessage(body, n, 20);
  }

  /** As {@link #withNewMessage(WarmUpBody, long)}, with a message of {@code words} words. */
  static byte[] withNewMessage(WarmUpBody body, long n, int words) {
    byte[] b = body.bytes();
    int end = lastIndexOf(b, (byte) ']'); // the messages' end: no other field holds a ']'
    byte[] tail = ((body.spaced() ? ", " : ",") + message("user", text(new SplittableRandom(n), words), body.spaced()))
        .getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[b.length + tail.length];
    System.arraycopy(b, 0, out, 0, end);
    System.arraycopy(tail, 0, out, end, tail.length);
    System.arraycopy(b, end, out, end + tail.length, b.length - end);
    return out;
  }

  private static int lastIndexOf(byte[] b, byte x) {
    for (int i = b.length - 1; i >= 0; i--) {
      if (b[i] == x) {
        return i;
      }
    }
    throw new IllegalArgumentException("no ']' in the body");
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
}
