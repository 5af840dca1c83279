package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.admission.RequestFields;
import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.core.policy.Candidate;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.ChatTemplateException;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ProxyConfig;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.codec.http.HttpResponseStatus;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * kvroute's routing without its HTTP listener, for a proxy that forwards requests itself and asks
 * kvroute only where to send them: the Gateway API Inference Extension's endpoint picker ({@code kvroute
 * epp}, module kvroute-epp) drives it from Envoy's {@code ext_proc} stream.
 *
 * <p>It runs what {@link KvrouteServer} runs beside its listener: the backends of the configuration
 * and of Kubernetes discovery ({@code discovery.kubernetes}), their health checks and engine-load
 * scrapes, model discovery, KV-event subscriptions (precise and hybrid index modes), admission's
 * saturation view, and the routing core. {@link #pick} takes one request's path, body and headers
 * and gives a {@link Pick}: either the endpoints to use (the policy's choice first, then fallbacks) or
 * the error to answer. The caller then tells the pick what the response does ({@link
 * Pick#responseHeaders}, {@link Pick#responseBody}, {@link Pick#end}, {@link Pick#cancel}), so that
 * the load lease, the prefix index and the metrics follow the request exactly as in the proxy: the
 * first body byte of a 2xx answer is its first token, the end releases the lease, and a request that
 * was never answered with a 2xx gives its pages back to the index.
 *
 * <p>Endpoints are {@code host:port} of each backend's URL ({@code 10.0.0.7:8000}), as the GAIE
 * protocol names them.
 *
 * <p>Thread-safe: {@link #pick} may be called from any thread; each {@link Pick} is driven by one
 * request's callbacks (in order), and {@link Pick#cancel} may race with them.
 *
 * <p>Why one unit of about 680 lines: the class is the wiring of those services (each its own class)
 * plus {@link Pick}, the one request's lease state machine; splitting {@link Pick} out would expose
 * the lease and index hand-offs that only this class may make, as {@code ProxyExchange} keeps its own.
 */
public final class EndpointPicker implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(EndpointPicker.class.getName());

  private final ProxyConfig config;
  private final RouterCore core;
  private final EventLoopGroup loops;
  private final BackendRegistry backends;
  private final HealthChecker health;
  private final ControlClient control;
  private final ModelDiscovery discovery;
  private final KvEventSubscriptions kvEvents;
  private final ProxyMetrics metrics;
  private final ModelCatalog models;
  private final Admission admission;
  private final RequestParser parser;
  private final Ticker ticker = Ticker.system();
  private final int fallbacks;
  private volatile KubernetesDiscovery kubernetes;

  private EndpointPicker(ProxyConfig config, RouterCore core, int fallbacks) {
    if (fallbacks < 0) {
      throw new IllegalArgumentException("fallbacks: " + fallbacks + " (expected: >= 0)");
    }
    this.config = config;
    this.core = core;
    this.fallbacks = fallbacks;
    Transport transport = Transport.best();
    this.loops = transport.group(Math.max(1, Math.min(2, config.eventLoopThreads() == 0 ? 2 : config.eventLoopThreads())));
    this.metrics = new ProxyMetrics(config.policy().name());
    this.backends = new BackendRegistry(config, core, metrics, ticker);
    ControlClient control = new ControlClient(loops, transport.channel(), config.timeouts().connect());
    this.control = control;
    this.health = new HealthChecker(config.healthCheck(), backends, control, loops.next());
    this.kvEvents = config.index().usesEvents() && core.index() instanceof KvEventIndex events
        ? new KvEventSubscriptions(config.index(), events, metrics.registry()) : null;
    this.discovery = new ModelDiscovery(config.models(), backends, control, loops.next(),
        config.healthCheck().timeout(), config.healthCheck().interval());
    health.onRecovered(discovery::refresh);
    backends.hooks(b -> {
      health.probeNow(b);
      discovery.refresh(b);
      if (kvEvents != null) {
        kvEvents.added(b);
      }
    }, id -> {
      if (kvEvents != null) {
        kvEvents.removed(id);
      }
    });
    this.models = new ModelCatalog(config.models(), config.routing().tokenizers().keySet());
    this.admission = new Admission(config.admission(), backends, core.loads(), ticker, loops.next(), metrics.registry());
    this.parser = RequestParser.create(config.routing().sessionHeader(), config.routing().sessionField(),
        // hashed while parsing only if routing asks for every message's hash (not a policy that reads
        // no prompt, nor the piece-cache tokenizer, which compares a conversation's bytes instead)
        core.asksForMessageHashes());
    metrics.addGlobalGauges(core, null);
  }

  /**
   * Starts the picker's fleet as {@code config} describes it (backends, discovery, health checks,
   * policy, index, tokenizer); returns once Kubernetes discovery (if configured) has listed the pods
   * and the first model reads are in (at most a health-check timeout).
   *
   * @param fallbacks how many endpoints to name after the chosen one, as fallbacks (0: none)
   * @throws dev.kvroute.proxy.config.ConfigException if the policy or tokenizer name is unknown
   * @throws IllegalStateException if Kubernetes discovery cannot list the pods (one line saying why)
   * @throws IllegalArgumentException if {@code fallbacks < 0}
   */
  public static EndpointPicker start(ProxyConfig config, int fallbacks) {
    EndpointPicker p = new EndpointPicker(config, KvrouteServer.createCore(config), fallbacks);
    try {
      for (BackendConfig b : config.backends()) {
        p.backends.add(b);
      }
      if (config.discovery().kubernetes() != null) {
        p.kubernetes = KubernetesDiscovery.start(config.discovery().kubernetes(), p.backends);
      }
      p.discovery.awaitPending(config.healthCheck().timeout());
      p.health.start();
      p.discovery.start();
    } catch (RuntimeException e) {
      p.close();
      throw e;
    }
    return p;
  }

  /** The routing core (index, loads, policy). */
  public RouterCore core() {
    return core;
  }

  /** The configuration the picker runs with. */
  public ProxyConfig config() {
    return config;
  }

  /** The endpoints ({@code host:port}) that may take a request now, in the order added. */
  public List<String> routableEndpoints() {
    List<String> out = new ArrayList<>();
    for (Backend b : backends.routable(Set.of())) {
      out.add(endpointOf(b));
    }
    return out;
  }

  /** Every endpoint ({@code host:port}) known now, routable or not, in the order added. */
  public List<String> endpoints() {
    List<String> out = new ArrayList<>();
    for (Backend b : backends.all()) {
      if (!b.removed()) {
        out.add(endpointOf(b));
      }
    }
    return out;
  }

  /** Whether at least one backend passes its health probe. */
  public boolean anyHealthy() {
    return backends.anyHealthy();
  }

  /** The Prometheus text exposition of the picker's metrics (the proxy's names). */
  public String scrapeMetrics() {
    return metrics.scrape();
  }

  /** {@code host:port} of a backend's URL, as the GAIE protocol names an endpoint. */
  static String endpointOf(Backend b) {
    URI u = b.config().url();
    String host = u.getHost();
    if (host != null && host.indexOf(':') >= 0 && !host.startsWith("[")) {
      host = "[" + host + "]";
    }
    return host + ":" + u.getPort();
  }

  /**
   * Picks where one request goes.
   *
   * <p>A generation request ({@code /v1/chat/completions}, {@code /v1/completions}, {@code /generate})
   * is parsed, its model resolved, and routed by the policy over the prefix index, taking a lease on
   * the chosen backend; any other path goes round-robin with no lease. Candidates are the routable
   * backends that serve the model, narrowed to {@code subset} when it is given (an entry without a
   * port allows every port of that host). The chosen endpoint comes first; up to {@code fallbacks}
   * more follow, the other candidates by matched prefix tokens (most first), then in-flight requests
   * (fewest first), then name.
   *
   * <p>Errors are picks too ({@link Pick#picked()} false): 400 for a body the engine would refuse, 404
   * for a model no backend serves, 503 when no candidate is left (none ready, or none in the subset),
   * 429 when admission is on, every candidate is saturated and the request is sheddable (priority
   * below 0, from the body's {@code priority} or {@code admission.priorityHeader}).
   *
   * @param path the request's {@code :path} (a query is ignored)
   * @param body the whole request body
   * @param header the request's headers by lowercase name (one value), for the session key and priority
   * @param subset the data plane's subset hint ({@code host:port} or {@code host}), or {@code null}
   *     when there is none
   */
  public Pick pick(String path, byte[] body, Function<String, String> header, Collection<String> subset) {
    long t0 = ticker.nanos();
    Endpoint endpoint = Endpoint.forPath(path);
    RequestView view = null;
    ModelCatalog.Resolved model = null;
    String tag = endpoint == null ? "other" : endpointTag(endpoint);
    long retryAfter = config.healthCheck().retryAfterSeconds();
    if (!backends.anyRoutable()) { // nothing to pick from, whatever the request says
      metrics.request("none", tag, Outcome.UNAVAILABLE, 0);
      return Pick.error(this, 503, "no ready endpoint", null, retryAfter);
    }
    if (endpoint != null) {
      InvalidRequestException badHeaders = RequestChecks.generation(header, config.admission().priorityHeader());
      if (badHeaders != null) {
        metrics.rejected(tag);
        return Pick.error(this, 400, badHeaders.getMessage(), badHeaders.param(), -1);
      }
      try {
        view = parser.parse(endpoint, body, header);
      } catch (InvalidRequestException e) {
        metrics.rejected(tag);
        return Pick.error(this, 400, e.getMessage(), e.param(), -1);
      }
      model = models.resolve(view, () -> body, backends.all());
      if (model.unknown()) {
        metrics.modelRequest(model.label(), Outcome.REJECTED, 0, -1);
        return Pick.error(this, 404, "The model `" + model.requested() + "` does not exist.", "model", -1);
      }
      String tooLong = models.tooLong(view, model);
      if (tooLong != null) {
        metrics.modelRequest(model.label(), Outcome.REJECTED, 0, -1);
        return Pick.error(this, 400, tooLong, tooLong.contains(" characters (") ? "input_text" : "input_tokens", -1);
      }
    }
    List<Backend> candidates = backends.routable(Set.of());
    if (model != null) {
      ModelCatalog.Resolved m = model;
      candidates.removeIf(b -> !m.serves(b));
    }
    if (subset != null) {
      candidates = inSubset(candidates, subset);
    }
    if (candidates.isEmpty()) {
      metrics.request("none", tag, Outcome.UNAVAILABLE, 0);
      String why = subset != null ? "no ready endpoint in the subset hint " + subset
          : model != null && model.served() != null && !model.serving().isEmpty()
              ? "no healthy backend serves model " + model.served() : "no healthy backend";
      return Pick.error(this, 503, why, null, retryAfter);
    }
    if (model != null && config.models().loraAffinity()) {
      candidates = LoraAffinity.prefer(candidates, model.adapter(),
          b -> core.loads().load(b.id()).inFlightRequests(), config.policy().balanceAbsThreshold());
    }
    if (view != null && admission.enabled()) {
      boolean allSaturated = true;
      for (Backend b : candidates) {
        allSaturated &= admission.saturated(b);
      }
      if (allSaturated && priority(body, header) < 0) {
        metrics.request("none", tag, Outcome.RATE_LIMITED, 0);
        return Pick.error(this, 429, "every endpoint is saturated and the request is sheddable (priority < 0)",
            null, admission.retryAfterSeconds());
      }
    }
    if (view == null) {
      Backend b = backends.pickPassthrough(candidates);
      return new Pick(this, List.of(endpointOf(b)), b, null, null, null, tag, null, t0);
    }
    List<BackendId> ids = new ArrayList<>(candidates.size());
    for (Backend b : candidates) {
      ids.add(b.id());
    }
    RouterCore.Routed r;
    try {
      r = core.route(model.tokenized(view), model.namespace(), ids);
    } catch (ChatTemplateException e) {
      metrics.rejected(tag);
      return Pick.error(this, 400, e.getMessage(), null, -1);
    } catch (IllegalStateException e) { // every candidate left between the snapshot and the decision
      return Pick.error(this, 503, "no healthy backend", null, retryAfter);
    }
    metrics.decision(r.decision().rule(), ticker.nanos() - t0);
    Backend chosen = backends.get(r.decision().backend());
    if (chosen == null) {
      r.lease().releaseUnserved();
      return Pick.error(this, 503, "the chosen backend left", null, retryAfter);
    }
    metrics.predicted(chosen.id().name(), r);
    List<String> endpoints = new ArrayList<>(1 + fallbacks);
    endpoints.add(endpointOf(chosen));
    for (Backend b : fallbackOrder(r.decision(), candidates, chosen)) {
      if (endpoints.size() > fallbacks) {
        break;
      }
      endpoints.add(endpointOf(b));
    }
    return new Pick(this, endpoints, chosen, r, view, model, tag, model.rewrittenBody(), t0);
  }

  private static String endpointTag(Endpoint e) {
    switch (e) {
      case CHAT_COMPLETIONS:
        return "chat";
      case COMPLETIONS:
        return "completions";
      default:
        return "generate";
    }
  }

  private int priority(byte[] body, Function<String, String> header) {
    RequestFields f = RequestFields.read(body, 0, body.length);
    if (f.priority() != null) {
      return f.priority();
    }
    String h = header.apply(config.admission().priorityHeader().toLowerCase(java.util.Locale.ROOT));
    if (h != null) {
      try {
        return Integer.parseInt(h.trim());
      } catch (NumberFormatException ignored) {
        // not a number: as if absent
      }
    }
    return 0;
  }

  private static List<Backend> inSubset(List<Backend> candidates, Collection<String> subset) {
    Set<String> exact = new HashSet<>();
    Set<String> hosts = new HashSet<>();
    for (String s : subset) {
      String e = s.trim();
      if (e.isEmpty()) {
        continue;
      }
      int colon = e.lastIndexOf(':');
      boolean hasPort = colon > 0 && (e.indexOf(':') == colon || e.startsWith("[")) && colon > e.lastIndexOf(']');
      if (hasPort) {
        exact.add(e);
      } else {
        hosts.add(e.startsWith("[") ? e : e.indexOf(':') >= 0 ? "[" + e + "]" : e);
      }
    }
    List<Backend> out = new ArrayList<>();
    for (Backend b : candidates) {
      String ep = endpointOf(b);
      if (exact.contains(ep) || hosts.contains(ep.substring(0, ep.lastIndexOf(':')))) {
        out.add(b);
      }
    }
    return out;
  }

  private List<Backend> fallbackOrder(Decision d, List<Backend> candidates, Backend chosen) {
    List<Backend> rest = new ArrayList<>(candidates);
    rest.remove(chosen);
    java.util.Map<BackendId, Candidate> seen = new java.util.HashMap<>();
    for (Candidate c : d.candidates()) {
      seen.put(c.backend(), c);
    }
    rest.sort(Comparator.<Backend>comparingInt(b -> seen.containsKey(b.id()) ? -seen.get(b.id()).matchedTokens() : 0)
        .thenComparingInt(b -> core.loads().load(b.id()).inFlightRequests())
        .thenComparing(b -> b.id().name()));
    return rest;
  }

  /** The backend whose endpoint is {@code endpoint}, or {@code null}. */
  private Backend byEndpoint(String endpoint) {
    for (Backend b : backends.all()) {
      if (!b.removed() && endpointOf(b).equals(endpoint)) {
        return b;
      }
    }
    return null;
  }

  /**
   * Stops health checks, discovery and KV-event subscriptions and frees the threads. Picks still
   * running may be ended afterwards (their leases are in the core).
   */
  @Override
  public void close() {
    KubernetesDiscovery k = kubernetes;
    if (k != null) {
      k.close();
    }
    health.close();
    discovery.close();
    if (kvEvents != null) {
      kvEvents.close();
    }
    metrics.close();
    control.close(java.time.Duration.ofSeconds(5)); // before the loops stop: see KvrouteServer.close()
    loops.shutdownGracefully(0, 2, TimeUnit.SECONDS);
    loops.terminationFuture().awaitUninterruptibly(5, TimeUnit.SECONDS);
  }

  /**
   * One request's pick and its life afterwards: the endpoints to send it to or the error to answer,
   * then what its response does. Every path that ends the request ends its lease exactly once:
   * {@link #end} (the response is complete), {@link #cancel} (the stream went away first).
   *
   * <p>Thread-safe: the callbacks of one request come in order from one stream; {@link #cancel} may
   * come from another thread at any time.
   */
  public static final class Pick {
    private final EndpointPicker picker;
    private final List<String> endpoints;
    private final int status;
    private final String message;
    private final String param;
    private final long retryAfterSeconds;
    private final String tag;
    private final RequestView view;
    private final ModelCatalog.Resolved model;
    private final byte[] rewrittenBody;
    private final long startNanos;
    private Backend backend;
    private RouterCore.Routed routed;
    private int responseStatus;
    private UsageScanner usage;
    private boolean firstByteSeen;
    private boolean done;

    private Pick(EndpointPicker picker, List<String> endpoints, Backend backend, RouterCore.Routed routed,
        RequestView view, ModelCatalog.Resolved model, String tag, byte[] rewrittenBody, long startNanos) {
      this.picker = picker;
      this.endpoints = List.copyOf(endpoints);
      this.backend = backend;
      this.routed = routed;
      this.view = view;
      this.model = model;
      this.tag = tag;
      this.rewrittenBody = rewrittenBody;
      this.startNanos = startNanos;
      this.status = 200;
      this.message = null;
      this.param = null;
      this.retryAfterSeconds = -1;
    }

    private Pick(EndpointPicker picker, int status, String message, String param, long retryAfterSeconds) {
      this.picker = picker;
      this.endpoints = List.of();
      this.status = status;
      this.message = message;
      this.param = param;
      this.retryAfterSeconds = retryAfterSeconds;
      this.tag = null;
      this.view = null;
      this.model = null;
      this.rewrittenBody = null;
      this.startNanos = 0;
      this.done = true;
    }

    private static Pick error(EndpointPicker picker, int status, String message, String param, long retryAfterSeconds) {
      return new Pick(picker, status, message, param, retryAfterSeconds);
    }

    /** Whether an endpoint was picked; otherwise {@link #status} and {@link #errorBody} say why not. */
    public boolean picked() {
      return !endpoints.isEmpty();
    }

    /** The endpoints, {@code host:port}: the chosen one first, then the fallbacks; empty for an error. */
    public List<String> endpoints() {
      return endpoints;
    }

    /** The HTTP status to answer: 200 for a pick, else 400, 404, 429 or 503. */
    public int status() {
      return status;
    }

    /** An error's seconds for {@code Retry-After}, or {@code -1} for none. */
    public long retryAfterSeconds() {
      return retryAfterSeconds;
    }

    /**
     * An error's OpenAI-style JSON body ({@code {"error":{"message","type","param","code"}}}, the shape
     * vLLM answers with; a 429 has OpenAI's {@code rate_limit_exceeded}); {@code null} for a pick.
     */
    public byte[] errorBody() {
      if (picked()) {
        return null;
      }
      io.netty.handler.codec.http.FullHttpResponse r = status == 429
          ? HttpErrors.rateLimited(Unpooled.buffer().alloc(), message, Math.max(1, retryAfterSeconds), true)
          : HttpErrors.response(Unpooled.buffer().alloc(), HttpResponseStatus.valueOf(status), message, param, true);
      try {
        return ByteBufUtil.getBytes(r.content());
      } finally {
        r.release();
      }
    }

    /** The routing decision, or {@code null} (an error, or a path routed without the policy). */
    public Decision decision() {
      RouterCore.Routed r = routed;
      return r == null ? null : r.decision();
    }

    /** Tokens the chosen backend is predicted to have cached, or 0. */
    public int predictedCachedTokens() {
      RouterCore.Routed r = routed;
      return r == null ? 0 : r.predictedCachedTokens();
    }

    /**
     * The body to forward when routing changed it (a model alias rewritten to the served name; every
     * other byte unchanged), or {@code null} to forward the original bytes.
     */
    public byte[] rewrittenBody() {
      return rewrittenBody == null ? null : rewrittenBody.clone();
    }

    /**
     * The data plane reports the endpoint that served the request (GAIE's
     * {@code x-gateway-destination-endpoint-served}). When it is a fallback, the lease and the
     * prompt's pages move to it: the chosen backend's lease ends unserved (its pages given back) and the
     * served one's begins, so the index records the prompt where the engine will cache it.
     */
    public synchronized void served(String endpoint) {
      if (done || endpoint == null || backend == null || endpoint.equals(endpointOf(backend))) {
        return;
      }
      Backend served = picker.byEndpoint(endpoint.trim());
      if (served == null) {
        LOG.log(Level.DEBUG, () -> "served endpoint " + endpoint + " is not a known backend");
        return;
      }
      RouterCore.Routed old = routed;
      backend = served;
      if (old == null) {
        return;
      }
      old.lease().releaseUnserved();
      routed = null;
      try {
        routed = picker.core.route(old.promptTokens(), view.sessionKey(), model.namespace(), List.of(served.id()));
      } catch (IllegalStateException e) {
        LOG.log(Level.DEBUG, () -> "served endpoint " + endpoint + " left the index: " + e.getMessage());
      }
    }

    /**
     * The response head arrived: {@code status} is its {@code :status}, {@code contentType} its
     * {@code content-type} (or {@code null}); a 2xx answer to a generation request is scanned for usage.
     */
    public synchronized void responseHeaders(int status, String contentType) {
      if (done) {
        return;
      }
      responseStatus = status;
      if (status == 200 && view != null) {
        usage = UsageScanner.forContentType(contentType);
      }
    }

    /**
     * A piece of the response body (as the proxy streams it): the first byte of a 2xx answer is the
     * request's first token (its prefill tokens leave the backend's prefill load); usage is read
     * without buffering. {@code endOfStream} ends the request, as {@link #end}.
     */
    public synchronized void responseBody(ByteBuffer chunk, boolean endOfStream) {
      if (done) {
        return;
      }
      boolean readable = chunk.hasRemaining();
      if (!firstByteSeen && (readable || endOfStream) && responseStatus != 0) {
        firstByteSeen = true;
        long now = picker.ticker.nanos();
        if (routed != null && responseStatus >= 200 && responseStatus < 300) {
          routed.lease().firstToken();
        }
        picker.metrics.ttft(backend.id().name(), tag, now - startNanos);
        if (model != null) {
          picker.metrics.modelTtft(model.label(), now - startNanos);
        }
      }
      if (usage != null && readable) {
        ByteBuf b = Unpooled.wrappedBuffer(chunk.duplicate());
        usage.feed(b, endOfStream);
      }
      if (endOfStream) {
        finish(true);
      }
    }

    /** The response is complete (trailers arrived, or the body's end). Idempotent. */
    public synchronized void end() {
      finish(true);
    }

    /**
     * The request ended before its response did (the stream was cancelled or failed): the lease ends,
     * unserved unless a 2xx answer had begun. Idempotent.
     */
    public synchronized void cancel() {
      finish(false);
    }

    /** Whether the request has ended (or never started: an error pick). */
    public synchronized boolean done() {
      return done;
    }

    private void finish(boolean complete) {
      if (done) {
        return;
      }
      done = true;
      boolean served = firstByteSeen && responseStatus >= 200 && responseStatus < 300;
      Outcome outcome = !complete ? Outcome.CANCELLED
          : responseStatus >= 500 ? Outcome.SERVER_ERROR
          : responseStatus >= 400 ? Outcome.CLIENT_ERROR
          : responseStatus == 0 ? Outcome.FAILED : Outcome.SUCCESS;
      String backendTag = backend == null ? "none" : backend.id().name();
      boolean reported = false;
      if (usage != null && outcome == Outcome.SUCCESS) {
        usage.end();
        reported = usage.found();
      }
      if (routed != null) {
        if (!served) {
          routed.lease().releaseUnserved();
        } else if (reported && usage.cachedTokens() >= 0 && picker.config.index().correctFromUsage()) {
          // as the proxy does: the engine's cached_tokens correct the approximate view they contradict
          int cached = (int) Math.min(usage.cachedTokens(), Integer.MAX_VALUE);
          if (dev.kvroute.core.index.UsageCorrection.keepPages(routed.promptLength(),
              routed.predictedCachedTokens(), cached, picker.core.index().pageSizeTokens()) >= 0) {
            picker.metrics.usageCorrection(backendTag);
          }
          routed.lease().releaseReported(cached);
        } else {
          routed.lease().release();
        }
      }
      if (usage != null && outcome == Outcome.SUCCESS) {
        if (reported) {
          picker.metrics.reported(backendTag, usage.promptTokens(), usage.cachedTokens(),
              ProxyMetrics.prediction(routed), picker.core.index().pageSizeTokens());
        } else {
          picker.metrics.usageMissing();
        }
      }
      picker.metrics.request(backendTag, tag, outcome, picker.ticker.nanos() - startNanos);
      if (model != null) {
        picker.metrics.modelRequest(model.label(), outcome, reported ? usage.promptTokens() : 0,
            reported ? usage.cachedTokens() : -1);
      }
    }

    /** Usage the response reported ({@code prompt_tokens}, {@code cached_tokens}), or {@code null} if none yet. */
    public synchronized long[] reportedUsage() {
      return usage != null && usage.found() ? new long[] {usage.promptTokens(), usage.cachedTokens()} : null;
    }

    /** The backend id the request is (now) on, or {@code null} for an error. */
    public synchronized String backend() {
      return backend == null ? null : backend.id().name();
    }
  }
}
