package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.load.LoadTracker;
import dev.kvroute.core.policy.Policies;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ConfigException;
import dev.kvroute.proxy.config.IndexConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import dev.kvroute.proxy.config.RoutingConfig;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A running kvroute proxy, started in-process: the proxy listener, the admin listener, the upstream
 * pools and health checks. (Bundled mock engines, {@code kvroute serve --mock-backends N}, are the
 * app's composition: it starts them first and passes their URLs here as backends.)
 *
 * <pre>{@code
 * ProxyConfig config = ProxyConfig.defaults()
 *     .withPort(0)                       // ephemeral
 *     .withAdminPort(-1)                 // no admin API
 *     .withPolicy("cache-aware")
 *     .withBackendUrls(List.of(URI.create("http://127.0.0.1:8001"), URI.create("http://127.0.0.1:8002")));
 * try (KvrouteServer router = KvrouteServer.start(config)) {
 *   URI base = router.uri();             // http://127.0.0.1:PORT, OpenAI base URL is base + "/v1"
 * }
 * }</pre>
 *
 * <p>{@link #start(ProxyConfig)} returns once both listeners are bound; backends are healthy from
 * the start and probed at once. {@link #drain(Duration)} is the graceful shutdown: it stops
 * accepting connections and waits, up to a limit, for the requests in flight to be answered.
 * {@link #close()} stops listening, closes every connection (aborting requests in flight) and frees
 * the threads; it waits at most a few seconds.
 *
 * <p>Thread-safe.
 */
public final class KvrouteServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(KvrouteServer.class.getName());

  private final ProxyConfig config;
  private final RouterCore core;
  private final Transport transport;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;
  private final UpstreamPool pool;
  private final HealthChecker health;
  private final ModelDiscovery discovery;
  private final KvEventSubscriptions kvEvents;
  private final ProxyContext context;
  private final ThreadPoolExecutor bodyWorkers;
  private Channel serverChannel;
  private Channel adminChannel;
  private final ControlClient control;
  /** The admin API's open connections, closed before the event loops shut down. */
  private final ChannelGroup adminConnections = new DefaultChannelGroup("kvroute-admin", GlobalEventExecutor.INSTANCE);
  private volatile KubernetesDiscovery kubernetes;

  private KvrouteServer(ProxyConfig config, RouterCore core, Transport transport) {
    this.config = config;
    this.core = core;
    this.transport = transport;
    this.boss = transport.group(1);
    this.workers = transport.group(config.eventLoopThreads());
    Ticker ticker = Ticker.system();
    ProxyMetrics metrics = new ProxyMetrics(config.policy().name());
    this.pool = new UpstreamPool(config, transport.channel(), metrics);
    BackendRegistry backends = new BackendRegistry(config, core, metrics, ticker);
    ControlClient control = new ControlClient(workers, transport.channel(), config.timeouts().connect());
    this.control = control;
    this.health = new HealthChecker(config.healthCheck(), backends, control, workers.next());
    this.kvEvents = config.index().usesEvents() && core.index() instanceof KvEventIndex events
        ? new KvEventSubscriptions(config.index(), events, metrics.registry()) : null;
    if (core.index() instanceof KvEventIndex events) {
      metrics.indexModes(b -> events.mode(BackendId.of(b)).name().toLowerCase(java.util.Locale.ROOT));
    }
    this.discovery = new ModelDiscovery(config.models(), backends, control, workers.next(),
        config.healthCheck().timeout(), config.healthCheck().interval());
    health.onRecovered(discovery::refresh);
    backends.hooks(b -> {
      health.probeNow(b);
      discovery.refresh(b);
      if (kvEvents != null) {
        kvEvents.added(b);
      }
    }, id -> {
      pool.evict(id);
      if (kvEvents != null) {
        kvEvents.removed(id);
      }
    });
    RequestParser parser = RequestParser.create(config.routing().sessionHeader(), config.routing().sessionField(),
        // hashed while parsing only if routing asks for every message's hash (not a policy that reads
        // no prompt, nor the piece-cache tokenizer, which compares a conversation's bytes instead)
        core.asksForMessageHashes());
    this.bodyWorkers = bodyWorkers();
    this.context = new ProxyContext(
        config, core, parser, backends, pool, control, metrics, ticker, bodyWorkers, new ClientConnections(),
        new ApiPaths(config.api()), new ModelCatalog(config.models(), config.routing().tokenizers().keySet()), discovery,
        new Admission(config.admission(), backends, core.loads(), ticker, boss.next(), metrics.registry()),
        engineTokenizer(config, control, core, metrics, ticker));
    metrics.addGlobalGauges(core, pool);
  }

  /** The engine's tokenizer client when some model's tokenizer is {@code engine}, else {@code null}. */
  private static EngineTokenizer engineTokenizer(ProxyConfig config, ControlClient control, RouterCore core,
      ProxyMetrics metrics, Ticker ticker) {
    RoutingConfig routing = config.routing();
    if (!RouterTokenizers.anyEngine(routing)) {
      return null;
    }
    return new EngineTokenizer(RouterTokenizers.models(routing, true), RouterTokenizers.isEngine(routing.tokenizer()),
        RouterTokenizers.models(routing, false), routing.tokenizerTimeout(),
        new EngineTokenCache(dev.kvroute.core.tokenize.PromptTokenizer.DEFAULT_CACHE_BYTES, routing.tokenizerReuse()),
        EngineTokenizer.caller(control), core.loads(), metrics.registry(), ticker);
  }

  /**
   * Threads that parse and tokenize request bodies of at least {@link ProxyHandler#OFFLOAD_BODY_BYTES}
   * so that a huge prompt (tokenizing 1 MB of new text takes about a quarter of a second) never holds
   * up the other connections of an event loop: one per core, at most 256 bodies waiting.
   */
  private static ThreadPoolExecutor bodyWorkers() {
    int n = Math.max(1, Runtime.getRuntime().availableProcessors());
    ThreadPoolExecutor e = new ThreadPoolExecutor(n, n, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(256),
        new DefaultThreadFactory("kvroute-body", true));
    e.allowCoreThreadTimeOut(true);
    return e;
  }

  /**
   * Starts a proxy with the routing core {@code config} describes (policy, tokenizer, page size).
   *
   * @throws ConfigException if the policy or tokenizer name is unknown
   * @throws IllegalStateException if a port cannot be bound (the cause says why)
   */
  public static KvrouteServer start(ProxyConfig config) {
    return start(config, createCore(config));
  }

  /**
   * Starts a proxy routing with {@code core} (e.g. a core shared with a simulator); backends from
   * {@code config} are registered in it.
   *
   * @throws IllegalStateException if a port cannot be bound (the cause says why), or Kubernetes
   *     discovery cannot list the pods (one line saying why; see {@code discovery.kubernetes})
   */
  public static KvrouteServer start(ProxyConfig config, RouterCore core) {
    KvrouteServer s = new KvrouteServer(config, core, Transport.best());
    try {
      s.bind();
    } catch (RuntimeException e) {
      s.close();
      throw e;
    }
    return s;
  }

  /**
   * The routing core {@code config} describes: its policy over a radix prefix index of
   * {@code routing.pageSizeTokens} pages (wrapped in a {@link KvEventIndex} when {@code index.mode} is
   * {@code precise} or {@code hybrid}) and the jtokkit tokenizer {@code routing.tokenizer}.
   *
   * @throws ConfigException if the policy or tokenizer name is unknown
   */
  public static RouterCore createCore(ProxyConfig config) {
    RoutingPolicy policy;
    try {
      policy = Policies.create(config.policy().name(), config.policy(), new SplittableRandom(config.policy().seed()));
    } catch (IllegalArgumentException e) {
      throw new ConfigException("policy.name: " + config.policy().name()
          + " (expected: one of " + String.join(", ", Policies.names()) + ")", e);
    }
    PromptTokenizer tokenizer = RouterTokenizers.load(config.routing()).asPromptTokenizer();
    return RouterCore.create(policy, tokenizer, createIndex(config), LoadTracker.create());
  }

  /** The prefix index {@code config.index()} asks for, over {@code routing.pageSizeTokens} pages. */
  static PrefixIndex createIndex(ProxyConfig config) {
    PrefixIndex radix = PrefixIndex.radix(config.routing().pageSizeTokens(), Ticker.system());
    IndexConfig index = config.index();
    return !index.usesEvents() ? radix : KvEventIndex.create(radix, Ticker.system(),
        new KvEventIndex.Settings(index.speculativeTtl(), index.staleAfter()));
  }

  private void bind() {
    for (BackendConfig b : config.backends()) {
      context.backends().add(b);
    }
    // the first requests route by model: wait (up to a health-check timeout) for the first reads
    if (config.discovery().kubernetes() != null) {
      kubernetes = KubernetesDiscovery.start(config.discovery().kubernetes(), context.backends());
    }
    discovery.awaitPending(config.healthCheck().timeout());
    WriteBufferWaterMark marks = new WriteBufferWaterMark(
        config.writeBuffer().lowWaterMarkBytes(), config.writeBuffer().highWaterMarkBytes());
    ServerBootstrap proxy = new ServerBootstrap()
        .group(boss, workers)
        .channel(transport.serverChannel())
        // a burst of new connections waits in the kernel's accept queue (capped by net.core.somaxconn)
        // instead of having its SYNs dropped, which clients retry only after 1 s, then 3 s
        .option(ChannelOption.SO_BACKLOG, 4096)
        .option(ChannelOption.SO_REUSEADDR, true)
        .childOption(ChannelOption.AUTO_READ, false)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, marks)
        .childHandler(new ProxyInitializer(context));
    serverChannel = bindOrFail(proxy, config.bind(), config.port(), "proxy");
    if (config.admin().enabled()) {
      ServerBootstrap admin = new ServerBootstrap()
          .group(boss, workers)
          .channel(transport.serverChannel())
          .option(ChannelOption.SO_REUSEADDR, true)
          .childHandler(new AdminInitializer(context, adminConnections));
      adminChannel = bindOrFail(admin, config.admin().bind(), config.admin().port(), "admin");
    }
    if (config.admin().openWithoutToken()) {
      LOG.log(Level.WARNING, "admin API on {0}:{1} without a token (admin.insecureNoToken): anyone who reaches "
          + "this port can add or remove backends, and so receive every prompt", config.admin().bind(),
          String.valueOf(adminPort()));
    }
    health.start();
    discovery.start();
    // DEBUG: the program embedding the server prints the start line (kvroute serve: ServeCommand)
    LOG.log(Level.DEBUG, "kvroute listening on {0}:{1} ({2}, policy {3}, {4} backends{5})", config.bind(),
        String.valueOf(port()), transport.name(), config.policy().name(), context.backends().all().size(),
        adminChannel == null ? "" : ", admin on " + config.admin().bind() + ":" + adminPort());
  }

  private static Channel bindOrFail(ServerBootstrap b, String host, int port, String what) {
    var f = b.bind(host, port).awaitUninterruptibly();
    if (!f.isSuccess()) {
      throw new IllegalStateException("cannot listen for " + what + " on " + host + ":" + port + ": " + f.cause(), f.cause());
    }
    return f.channel();
  }

  /** The proxy's bound port. */
  public int port() {
    return ((InetSocketAddress) serverChannel.localAddress()).getPort();
  }

  /** The socket transport in use: {@code epoll} or {@code nio}. */
  public String transportName() {
    return transport.name();
  }

  /** The admin API's bound port, or {@code -1} when it is disabled. */
  public int adminPort() {
    return adminChannel == null ? -1 : ((InetSocketAddress) adminChannel.localAddress()).getPort();
  }

  /** {@code http://host:port} of the proxy ({@code 127.0.0.1} for a wildcard bind). */
  public URI uri() {
    return URI.create("http://" + host(config.bind()) + ":" + port());
  }

  /** {@code http://host:port} of the admin API, or {@code null} when it is disabled. */
  public URI adminUri() {
    return adminChannel == null ? null : URI.create("http://" + host(config.admin().bind()) + ":" + adminPort());
  }

  /** The configuration this proxy runs with. */
  public ProxyConfig config() {
    return config;
  }

  /** The event loops serving client connections (for tests that watch what they do). */
  EventLoopGroup eventLoops() {
    return workers;
  }

  /** The routing core (index, loads, policy) of this proxy. */
  public RouterCore core() {
    return core;
  }

  /** The current backends' names (ids), in the order added. */
  public List<BackendId> backends() {
    List<BackendId> ids = new ArrayList<>();
    for (Backend b : context.backends().all()) {
      ids.add(b.id());
    }
    return ids;
  }

  /** The proxy's shared state (for tests that look at its backends). */
  ProxyContext context() {
    return context;
  }

  /** The running Kubernetes discovery, or {@code null} when none is configured (for tests). */
  KubernetesDiscovery kubernetesDiscovery() {
    return kubernetes;
  }

  /** The Prometheus text exposition served at {@code /metrics}. */
  public String scrapeMetrics() {
    return context.metrics().scrape();
  }

  /**
   * Graceful shutdown, first half: stops accepting connections on the proxy port, closes idle client
   * connections, lets every request in progress finish (its response says {@code Connection: close},
   * and its connection is closed after it), and waits until no client connection is left or
   * {@code timeout} has passed. Routing, health checks and the admin API keep working meanwhile.
   * Call {@link #close()} afterwards, which aborts whatever is still in flight. Safe to call more
   * than once.
   *
   * @param timeout longest wait (the {@code timeouts.drain} setting in {@code kvroute serve})
   * @return whether every client connection closed within {@code timeout}
   * @throws InterruptedException if interrupted while waiting
   */
  public boolean drain(Duration timeout) throws InterruptedException {
    ClientConnections clients = context.clients();
    clients.startDraining();
    if (serverChannel != null) {
      serverChannel.close().awaitUninterruptibly();
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    while (clients.open() > 0) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        LOG.log(Level.WARNING, "drain: " + clients.open() + " client connections still open after "
            + timeout.toMillis() + " ms; closing them");
        return false;
      }
      Thread.sleep(Math.min(TimeUnit.NANOSECONDS.toMillis(left) + 1, 20));
    }
    return true;
  }

  /** The backend registry (tests). */
  BackendRegistry registry() {
    return context.backends();
  }

  /** Client connections open now (for tests and the drain). */
  int openClientConnections() {
    return context.clients().open();
  }

  /**
   * Stops listening, closes every connection (aborting requests in flight), stops health checks,
   * and frees the event loops.
   */
  @Override
  public void close() {
    if (kubernetes != null) {
      kubernetes.close();
    }
    health.close();
    discovery.close();
    if (kvEvents != null) {
      kvEvents.close();
    }
    if (serverChannel != null) {
      serverChannel.close().awaitUninterruptibly();
    }
    if (adminChannel != null) {
      adminChannel.close().awaitUninterruptibly();
    }
    // Every connection is closed, and the close awaited, while the loops still run: Netty 4.2.18's
    // SingleThreadIoEventLoop.run() can end a loop whose shutdown began while it ran tasks without
    // closing its channels (4.2.21 closes them), and an io_uring read left in flight then leaks its
    // buffer (a paranoid leak report in MultiModelIT, ~3% of runs on io_uring, from an admin API
    // connection still open). The proxy's client connections: each exchange also closes its
    // upstream request and ends its lease. The control client's: health probes, /metrics and
    // /v1/models reads, the engine's /tokenize.
    adminConnections.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
    context.clients().closeAll(Duration.ofSeconds(5));
    pool.close(Duration.ofSeconds(5));
    control.close(Duration.ofSeconds(5)); // probes and reads still in flight
    context.metrics().close();
    for (Runnable queued : bodyWorkers.shutdownNow()) {
      if (queued instanceof OffLoopRouting.Droppable task) {
        task.dropped(); // a body it held (its exchange was closed with its connection above)
      }
    }
    boss.shutdownGracefully(0, 2, TimeUnit.SECONDS);
    workers.shutdownGracefully(0, 2, TimeUnit.SECONDS);
    boss.terminationFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
    workers.terminationFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
  }

  private static String host(String bind) {
    return bind.equals("0.0.0.0") || bind.equals("::") ? "127.0.0.1" : bind;
  }
}
