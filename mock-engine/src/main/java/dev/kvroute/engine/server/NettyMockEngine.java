package dev.kvroute.engine.server;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.tokenize.ChatTemplateException;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.TokenizerSpec;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.kvevents.KvEventsConfig;
import dev.kvroute.engine.kvevents.ZmqKvEventPublisher;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.LoraSlots;
import dev.kvroute.engine.model.EngineStats;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * One mock engine replica on Netty: its server channel, connections, {@link EngineDriver} and metrics
 * all live on one event loop (epoll when available, else NIO), so nothing in it needs locking.
 *
 * <p>Thread-safe as a {@link MockEngineServer}; the fields below the constructor are confined to the
 * loop.
 */
final class NettyMockEngine implements MockEngineServer {
  private static final ConcurrentHashMap<String, PromptTokenizer> TOKENIZERS = new ConcurrentHashMap<>();

  final MockEngineOptions options;
  final EventLoop loop;
  final EngineDriver driver;
  final EngineMetrics metrics;
  final PromptTokenizer promptTokenizer;
  final RequestParser parser = RequestParser.create();
  final ReplyGenerator replies;
  final FaultControl faults;
  final EngineModels models;
  /** Draws which header-less requests get the default fault; used on the loop only. */
  final SplittableRandom faultDraw;
  final long startWall;
  /** The KV event publisher, or null when {@code options.kvEvents()} does not publish. */
  final ZmqKvEventPublisher kvEvents;
  private final EventLoopGroup ownedGroup;
  private final ChannelGroup connections;
  private Channel serverChannel;
  private int port;

  /**
   * The prompt tokenizer shared by every engine of this JVM for {@code spec} (a jtokkit encoding, or
   * {@code hf:PATH}: the model's tokenizer.json and chat template, as vLLM tokenizes), loaded and
   * warmed up on first use (by the thread starting the engine, before it listens).
   *
   * @throws IllegalArgumentException if the spec is unknown or its files are missing or corrupt
   */
  static PromptTokenizer sharedPromptTokenizer(String spec) {
    return TOKENIZERS.computeIfAbsent(spec, name -> warmedUp(load(name)));
  }

  private static PromptTokenizer load(String spec) {
    TokenizerSpec parsed;
    try {
      parsed = TokenizerSpec.parse(spec);
    } catch (IllegalArgumentException e) {
      // the spec's own list names engine, which only the router takes
      throw new IllegalArgumentException("tokenizer: " + spec + " (expected: o200k_base, cl100k_base, p50k_base, "
          + "r50k_base or hf:PATH)", e);
    }
    if (parsed.kind() == TokenizerSpec.Kind.ENGINE) {
      throw new IllegalArgumentException("tokenizer: engine (expected an encoding name or hf:PATH: the mock "
          + "engine is the engine)");
    }
    try {
      return parsed.load(java.time.InstantSource.system(), PromptTokenizer.DEFAULT_CACHE_BYTES);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("tokenizer: " + spec + ": " + e.getMessage(), e);
    }
  }

  /**
   * Runs a chat and a completions body through the request parser, the tokenizer and Jackson, so that
   * the first request (and a health probe queued behind it on the event loop) does not pay for class
   * loading and the tokenizer's cold start.
   */
  private static PromptTokenizer warmedUp(PromptTokenizer tokenizer) {
    RequestParser parser = RequestParser.create();
    byte[] chat = ("{\"model\":\"warm-up\",\"messages\":[{\"role\":\"system\",\"content\":\"You are a helpful"
        + " assistant.\"},{\"role\":\"user\",\"content\":\"Warm up, please: \\u00e9t\\u00e9 \\u2014 caf\\u00e9.\"}],"
        + "\"max_tokens\":1,\"stream\":true,\"stream_options\":{\"include_usage\":true}}").getBytes(StandardCharsets.UTF_8);
    byte[] completion = "{\"model\":\"warm-up\",\"prompt\":\"Warm up, please.\",\"max_tokens\":1}"
        .getBytes(StandardCharsets.UTF_8);
    try {
      try {
        tokenizer.tokenize(parser.parse(Endpoint.CHAT_COMPLETIONS, chat, header -> null));
      } catch (ChatTemplateException e) {
        // the model's template refuses this conversation (Gemma's a system message, Mistral's roles
        // that do not alternate); it refuses the requests that send one too, each answered 400 as vLLM does
      }
      tokenizer.tokenize(parser.parse(Endpoint.COMPLETIONS, completion, header -> null));
      GenerationValidator.MAPPER.readTree(chat);
    } catch (InvalidRequestException | java.io.IOException e) {
      throw new IllegalStateException("warm-up request rejected: " + e.getMessage(), e);
    }
    return tokenizer;
  }

  private NettyMockEngine(MockEngineOptions options, EventLoop loop, EventLoopGroup ownedGroup) {
    this(options, loop, ownedGroup, 0);
  }

  /** Replica {@code replica} of a fleet: its KV event endpoints' ports are offset by it. */
  private NettyMockEngine(MockEngineOptions options, EventLoop loop, EventLoopGroup ownedGroup, int replica) {
    this.options = options;
    this.loop = loop;
    this.ownedGroup = ownedGroup;
    this.promptTokenizer = sharedPromptTokenizer(options.tokenizer());
    this.replies = new ReplyGenerator(
        SingleTokenVocabulary.of(promptTokenizer.tokenizer()), options.seed(), options.meanOutputTokens());
    this.faults = new FaultControl(options.fault(), options.faultProbability(), options.health());
    this.faultDraw = new SplittableRandom(options.seed() ^ 0x5DEECE66DL);
    this.metrics = new EngineMetrics(options.modelName(), "0");
    KvEventsConfig events = options.kvEvents();
    this.kvEvents = events.publishes() ? new ZmqKvEventPublisher(events.forRank(replica), 0) : null;
    EngineConfig engine = events.enableKvCacheEvents()
        ? options.engine().toBuilder().enableKvCacheEvents(true).build() : options.engine();
    this.startWall = System.nanoTime();
    this.models = new EngineModels(options);
    long startEpochNanos = java.time.Instant.now().getEpochSecond() * 1_000_000_000L
        + java.time.Instant.now().getNano();
    this.driver = new EngineDriver(loop, EngineModel.create(engine), options.timeScale(), startWall, metrics,
        kvEvents, startEpochNanos,
        new LoraSlots(options.models().maxLoras(), Math.round(options.models().loraLoadSeconds() * 1e9)));
    this.connections = new DefaultChannelGroup(loop);
  }

  static MockEngineServer startStandalone(MockEngineOptions options) {
    EventLoopGroup group = newGroup(1);
    NettyMockEngine e = null;
    try {
      e = new NettyMockEngine(options, group.next(), group);
      e.bind(options.port());
      return e;
    } catch (RuntimeException ex) {
      if (e != null && e.kvEvents != null) {
        e.kvEvents.close();
      }
      group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      throw ex;
    }
  }

  static MockEngineFleet startFleet(MockEngineOptions options, int replicas) {
    if (replicas < 1) {
      throw new IllegalArgumentException("replicas: " + replicas + " (expected: >= 1)");
    }
    int threads = options.ioThreads() > 0
        ? options.ioThreads()
        : Math.min(replicas, Runtime.getRuntime().availableProcessors());
    EventLoopGroup group = newGroup(threads);
    List<MockEngineServer> started = new ArrayList<>();
    try {
      for (int i = 0; i < replicas; i++) {
        NettyMockEngine e = new NettyMockEngine(options, group.next(), null, i);
        started.add(e);
        e.bind(options.port() == 0 ? 0 : options.port() + i);
      }
    } catch (RuntimeException ex) {
      started.forEach(MockEngineServer::close);
      group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      throw ex;
    }
    return new Fleet(List.copyOf(started), group);
  }

  private static EventLoopGroup newGroup(int threads) {
    IoHandlerFactory factory = Epoll.isAvailable() ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory("mock-engine", true), factory);
  }

  private static Class<? extends ServerChannel> serverChannelClass() {
    return Epoll.isAvailable() ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
  }

  private void bind(int requestedPort) {
    ServerBootstrap b = new ServerBootstrap()
        .group(loop, loop)
        .channel(serverChannelClass())
        .option(ChannelOption.SO_BACKLOG, 4096)
        .option(ChannelOption.SO_REUSEADDR, true)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            connections.add(ch);
            ch.pipeline()
                // uvicorn's h11 refuses a request head above 16 KiB (h11_max_incomplete_event_size)
                .addLast("http", new HttpServerCodec(new HttpDecoderConfig()
                    .setMaxInitialLineLength(16 << 10).setMaxHeaderSize(16 << 10)))
                .addLast("aggregate", new HttpObjectAggregator(options.maxBodyBytes()))
                .addLast("engine", new MockEngineHandler(NettyMockEngine.this));
          }
        });
    try {
      serverChannel = b.bind(options.host(), requestedPort).sync().channel();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while binding " + options.host() + ":" + requestedPort, e);
    } catch (Exception e) {
      throw new IllegalStateException("cannot listen on " + options.host() + ":" + requestedPort + ": " + e.getMessage(), e);
    }
    port = ((InetSocketAddress) serverChannel.localAddress()).getPort();
  }

  @Override
  public int port() {
    return port;
  }

  @Override
  public String url() {
    String host = options.host();
    if (host.equals("0.0.0.0") || host.equals("::") || host.equals("[::]")) {
      host = "127.0.0.1";
    } else if (host.contains(":") && !host.startsWith("[")) {
      host = "[" + host + "]";
    }
    return "http://" + host + ":" + port;
  }

  @Override
  public MockEngineOptions options() {
    return options;
  }

  @Override
  public FaultControl faults() {
    return faults;
  }

  @Override
  public EngineStats stats() {
    if (loop.inEventLoop()) {
      return driver.stats();
    }
    try {
      return loop.submit(() -> driver.stats()).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    }
  }

  @Override
  public long modelNanos() {
    return driver.modelNow();
  }

  @Override
  public String kvEventsEndpoint() {
    return kvEvents == null ? null : connectable(kvEvents.endpoint());
  }

  @Override
  public String kvEventsReplayEndpoint() {
    return kvEvents == null || kvEvents.replayEndpoint() == null ? null : connectable(kvEvents.replayEndpoint());
  }

  @Override
  public long kvEventBatchesPublished() {
    return kvEvents == null ? 0 : kvEvents.publishedBatches();
  }

  @Override
  public boolean resetPrefixCache() {
    return onLoop(driver::resetPrefixCache);
  }

  /** A bound address a client can connect to: a wildcard host becomes 127.0.0.1. */
  static String connectable(String endpoint) {
    return endpoint.replace("tcp://0.0.0.0:", "tcp://127.0.0.1:").replace("tcp://*:", "tcp://127.0.0.1:")
        .replace("tcp://[::]:", "tcp://127.0.0.1:");
  }

  private <T> T onLoop(java.util.concurrent.Callable<T> task) {
    try {
      return loop.inEventLoop() ? task.call() : loop.submit(task).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException(e.getCause());
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void close() {
    if (serverChannel != null) {
      serverChannel.close().syncUninterruptibly();
    }
    connections.close().awaitUninterruptibly();
    if (!loop.isShuttingDown()) {
      loop.submit(driver::stop).awaitUninterruptibly();
    }
    if (kvEvents != null) {
      kvEvents.close();
    }
    if (ownedGroup != null) {
      ownedGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }

  @Override
  public String toString() {
    return "mock-engine " + url() + " (" + options.engine().scheduler().cliName() + ", "
        + options.engine().cost() + ", time scale " + options.timeScale()
        + (kvEvents == null ? "" : ", " + kvEvents) + ")";
  }

  /** A fleet sharing one event-loop group. */
  private static final class Fleet implements MockEngineFleet {
    private final List<MockEngineServer> replicas;
    private final EventLoopGroup group;

    Fleet(List<MockEngineServer> replicas, EventLoopGroup group) {
      this.replicas = replicas;
      this.group = group;
    }

    @Override
    public List<MockEngineServer> replicas() {
      return replicas;
    }

    @Override
    public List<String> urls() {
      return replicas.stream().map(MockEngineServer::url).toList();
    }

    @Override
    public void close() {
      replicas.forEach(MockEngineServer::close);
      group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
  }
}
