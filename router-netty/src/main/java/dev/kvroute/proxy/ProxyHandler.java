package dev.kvroute.proxy;

import dev.kvroute.core.policy.PromptReads;
import dev.kvroute.core.policy.RoutingPolicy;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.RequestView;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.ReferenceCountUtil;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * The last handler of a client connection: serves one request at a time, in order.
 *
 * <p>Routes by path (normalized by the aggregator, see {@link RequestTarget}): {@code GET /health}
 * (liveness), {@code GET /ready} (at least one routable backend) and {@code GET /metrics} (Prometheus
 * text) are answered here; a path outside the API allow-list ({@link ApiPaths}, {@code api.allowedPaths})
 * is 404 and never reaches an engine; {@code POST /v1/chat/completions}, {@code /v1/completions} and
 * {@code /generate} are parsed (400 on a malformed body) and routed by the policy; {@code GET
 * /v1/models} is merged from the healthy backends; any other allowed path passes through to a
 * healthy backend. The router's own responses to an HTTP/1.0 client that asked for keep-alive say
 * {@code Connection: keep-alive}, as relayed ones do.
 *
 * <p>Reading: auto-read is off. While a request is being served one read stays pending, so a client
 * that disconnects is noticed at once (and its upstream request aborted); requests pipelined behind
 * it are queued and no further read is issued until they are served.
 *
 * <p>Client timeout ({@code timeouts.client}): while no request is in progress (the connection is new
 * or its last response is complete), the next request must arrive in full within the timeout. If it
 * does not, a request whose body is still arriving is answered 408 and the connection closed;
 * otherwise (an idle keep-alive connection, or a head still arriving) the connection is closed
 * silently. So neither idle keep-alive connections nor slow-header clients hold connections forever.
 *
 * <p>Large bodies: a generation request whose body has at least {@link #OFFLOAD_BODY_BYTES} is parsed
 * and tokenized on the proxy's body workers, not on the event loop, and comes back to the loop with
 * its prompt tokens; the connection stays busy meanwhile (a close is still noticed). When the
 * workers' queue is full the request is answered 503.
 *
 * <p>Pipeline: {@code HttpServerCodec} → {@link RequestAggregator} → this.
 *
 * <p>One unit of about 750 lines because it owns one connection's read loop: the pending read, the
 * pipelined queue, the client timer and the hand-offs (body workers, the engine tokenizer) all
 * decide together when the next read is issued; the per-request work lives in {@link ProxyExchange},
 * the checks in {@link RequestChecks}.
 *
 * <p>Not thread-safe: one instance per connection, on its event loop.
 */
final class ProxyHandler extends ChannelInboundHandlerAdapter {
  private static final System.Logger LOG = System.getLogger(ProxyHandler.class.getName());
  /**
   * Bodies at least this large are parsed and tokenized off the event loop: 256 KiB of text is about
   * 60 ms of tokenizing when none of it is cached, long enough to delay every other connection of
   * the loop; smaller bodies cost less than the hop to another thread is worth.
   */
  static final int OFFLOAD_BODY_BYTES = 256 << 10;
  /**
   * Code points of new text (not in the tokenizer's caches) from which a smaller body's routing,
   * tokenizing included, runs on the body workers ({@link OffLoopRouting}): about 2 ms of encoding.
   */
  static final int COLD_TEXT_CODE_POINTS = 8 << 10;
  /** The router's own paths and the methods they answer: any other method gets 405 with {@code Allow}. */
  private static final java.util.Map<String, String> LOCAL_METHODS =
      java.util.Map.of("/health", "GET or HEAD", "/ready", "GET or HEAD", "/metrics", "GET");

  private final ProxyContext px;
  private final ArrayDeque<Object> queued = new ArrayDeque<>(2);
  private ChannelHandlerContext ctx;
  private ProxyExchange exchange;
  private boolean busy;
  private boolean closing;
  /**
   * The request id of the request away from the loop with no exchange yet (its body read on a body
   * worker, the engine tokenizing it, the backends asked for their models), else {@code null}; its
   * hand-off comes back to the loop, which alone sets and clears this.
   */
  private String offLoop;
  /** {@link #shutdown} answered 503 while the request was off the loop. */
  private boolean answeredAtShutdown;
  private ScheduledFuture<?> requestTimer;

  ProxyHandler(ProxyContext px) {
    this.px = px;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void channelActive(ChannelHandlerContext ctx) {
    awaitRequest();
    ctx.read();
    ctx.fireChannelActive();
    if (px.clients().draining()) {
      drain(); // accepted while the drain started
    }
  }

  @Override
  public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
    if (evt == ClientConnections.DRAIN) {
      drain();
      return;
    }
    if (evt == ClientConnections.SHUTDOWN) {
      shutdown();
      return;
    }
    ctx.fireUserEventTriggered(evt);
  }

  /**
   * The router is closing now: a request in an exchange is ended by it (a 503, or a stream's error
   * event; {@link #exchangeDone} then closes); one still uploading or away from the loop
   * ({@link #offLoop}) is answered 503 here (its hand-off, when it returns, finds the connection
   * closing and counts it); an idle connection just closes, one writing a local response after it.
   */
  private void shutdown() {
    closing = true;
    releaseQueued();
    if (exchange != null) {
      exchange.onShutdown();
      return;
    }
    cancelRequestTimer();
    RequestAggregator aggregator = ctx.pipeline().get(RequestAggregator.class);
    boolean uploading = !busy && aggregator != null && aggregator.inProgress();
    if (offLoop == null && !uploading) {
      if (!busy) {
        ctx.close(); // else a local response is being written: exchangeDone closes after it
      }
      return;
    }
    if (uploading) {
      aggregator.abandon();
    }
    answeredAtShutdown = offLoop != null;
    FullHttpResponse r = HttpErrors.response(ctx.alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE,
        ClientConnections.SHUTDOWN_MESSAGE, null, false);
    if (offLoop != null) {
      r.headers().set(Headers.X_REQUEST_ID, offLoop);
    }
    ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
  }

  /**
   * The proxy is draining: close now if no request is in progress, else once it is answered
   * ({@link #exchangeDone} closes a closing connection, and the response of a request still
   * uploading says {@code Connection: close}); requests pipelined behind it are dropped.
   */
  private void drain() {
    if (closing) {
      return;
    }
    RequestAggregator aggregator = ctx.pipeline().get(RequestAggregator.class);
    if (!busy && aggregator != null && aggregator.inProgress()) {
      // a request is still uploading: it is served (its response says Connection: close and
      // the connection closes after it, as keepAlive(req) is false from now on)
      return;
    }
    closing = true;
    if (!busy) {
      cancelRequestTimer();
      releaseQueued();
      ctx.close();
    }
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof FullHttpRequest) && !(msg instanceof RejectedRequest)) {
      ReferenceCountUtil.release(msg);
      return;
    }
    if (busy || closing) {
      queued.add(msg);
      return;
    }
    serve(msg);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    closing = true;
    cancelRequestTimer();
    releaseQueued();
    if (exchange != null) {
      exchange.onClientClosed();
    }
    ctx.fireChannelInactive();
  }

  @Override
  public void channelWritabilityChanged(ChannelHandlerContext ctx) {
    if (exchange != null) {
      exchange.onClientWritabilityChanged();
    }
    ctx.fireChannelWritabilityChanged();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    px.metrics().channelException("client");
    LOG.log(Level.DEBUG, () -> ctx.channel() + " client error: " + cause);
    ctx.close();
  }

  /** Called by the current exchange (or local response) when its response is done. */
  void exchangeDone(boolean keepAlive) {
    exchange = null;
    busy = false;
    if (!keepAlive || closing || px.clients().draining()) {
      closing = true;
      releaseQueued();
      ctx.close();
      return;
    }
    Object next = queued.poll();
    if (next != null) {
      serve(next);
    } else {
      awaitRequest();
      ctx.read();
    }
  }

  /** No request is in progress: the next one must arrive in full within {@code timeouts.client}. */
  private void awaitRequest() {
    cancelRequestTimer();
    requestTimer = ctx.executor().schedule(this::onRequestTimeout,
        px.config().timeouts().client().toNanos(), TimeUnit.NANOSECONDS);
  }

  private void cancelRequestTimer() {
    if (requestTimer != null) {
      requestTimer.cancel(false);
      requestTimer = null;
    }
  }

  private void onRequestTimeout() {
    requestTimer = null;
    if (busy || closing) {
      return;
    }
    closing = true;
    releaseQueued();
    RequestAggregator aggregator = ctx.pipeline().get(RequestAggregator.class);
    if (aggregator != null && aggregator.inProgress()) {
      aggregator.abandon();
      px.metrics().rejected("unknown");
      new RejectedRequest(HttpResponseStatus.REQUEST_TIMEOUT, "request not received in full within "
          + px.config().timeouts().client().toMillis() + " ms").answer(ctx.channel());
    } else {
      ctx.close();
    }
  }

  private void serve(Object msg) {
    busy = true;
    cancelRequestTimer();
    if (msg instanceof RejectedRequest) {
      RejectedRequest r = (RejectedRequest) msg;
      px.metrics().rejected("unknown");
      closing = true;
      releaseQueued();
      r.answer(ctx.channel());
      return;
    }
    FullHttpRequest req = (FullHttpRequest) msg;
    try {
      dispatch(req);
    } catch (RuntimeException e) {
      // a bug: the request's owner (this handler or its exchange) may be half-way; drop the connection
      LOG.log(Level.ERROR, ctx.channel() + " failed to serve a request", e);
      px.metrics().channelException("client");
      closing = true;
      ctx.close();
      return;
    }
    if (busy && queued.isEmpty()) {
      // watch the connection while the request is served: a close shows up as channelInactive
      ctx.read();
    }
  }

  private void dispatch(FullHttpRequest req) {
    Timeline timeline = new Timeline(px.ticker().nanos());
    // the aggregator left the target in normalized origin-form (RequestTarget): match it as it is
    String uri = req.uri();
    int q = uri.indexOf('?');
    String path = q < 0 ? uri : uri.substring(0, q);
    HttpMethod method = req.method();
    if (serveLocally(req, path, method)) {
      return;
    }
    if (!px.apiPaths().allows(path)) {
      rejectLocally(req, HttpResponseStatus.NOT_FOUND, "no route for " + method + " " + path
          + " (not an API path this router serves; see api.allowedPaths)", "unknown");
      return;
    }
    Endpoint endpoint = Endpoint.forPath(path);
    if (endpoint != null) {
      String tag = endpointTag(endpoint);
      if (!method.equals(HttpMethod.POST)) {
        rejectLocally(req, HttpResponseStatus.METHOD_NOT_ALLOWED, method + " " + path + " (expected: POST)", null, tag,
            HttpHeaderNames.ALLOW, "POST");
        return;
      }
      InvalidRequestException badHeaders = RequestChecks.generation(req.headers()::get, px.config().admission().priorityHeader());
      if (badHeaders != null) {
        rejectLocally(req, HttpResponseStatus.BAD_REQUEST, badHeaders.getMessage(), badHeaders.param(), tag);
        return;
      }
      if (req.content().readableBytes() >= OFFLOAD_BODY_BYTES) {
        parseOffLoop(endpoint, req, tag, timeline);
        return;
      }
      RequestView view;
      try {
        view = parse(endpoint, req);
      } catch (InvalidRequestException e) {
        rejectLocally(req, HttpResponseStatus.BAD_REQUEST, e.getMessage(), e.param(), tag);
        return;
      } catch (RuntimeException e) {
        LOG.log(Level.ERROR, "request parser failed on " + path, e);
        rejectLocally(req, HttpResponseStatus.INTERNAL_SERVER_ERROR, "cannot read the request: " + e, tag);
        return;
      }
      ModelCatalog.Resolved model = resolveModel(req, view);
      Refusal refused = refusal(view, model);
      if (refused != null) {
        px.metrics().modelRequest(model.label(), Outcome.REJECTED, 0, -1);
        rejectLocally(req, refused.status(), refused.message(), refused.param(), tag);
        return;
      }
      if (px.engineTokens() != null && readsPrompt(view) && px.engineTokens().applies(view.model())) {
        askEngine(endpoint, req, tag, view, timeline, model, engineRequest(view, model));
        return;
      }
      startExchange(req, tag, view, null, timeline, model);
      return;
    }
    if (path.equals("/v1/models") && method.equals(HttpMethod.GET)) {
      String union = px.models().union(px.backends().routable(Set.of()));
      if (union != null) {
        FullHttpResponse listed = text(HttpResponseStatus.OK, "application/json", union);
        listed.headers().set(Headers.X_REQUEST_ID, requestId(req));
        local(req, listed, "models", Outcome.SUCCESS);
      } else {
        mergedModels(req); // no backend's models known yet: ask them now
      }
      return;
    }
    startExchange(req, "passthrough", null, null, timeline);
  }

  /** Answers the router's own paths ({@code /health}, {@code /ready}, {@code /metrics}); false for any other. */
  private boolean serveLocally(FullHttpRequest req, String path, HttpMethod method) {
    if (path.equals("/health") && (method.equals(HttpMethod.GET) || method.equals(HttpMethod.HEAD))) {
      local(req, text(HttpResponseStatus.OK, "application/json", "{\"status\":\"ok\"}"), null, null);
      return true;
    }
    if (path.equals("/ready") && (method.equals(HttpMethod.GET) || method.equals(HttpMethod.HEAD))) {
      boolean ready = px.backends().anyHealthy();
      local(req, text(ready ? HttpResponseStatus.OK : HttpResponseStatus.SERVICE_UNAVAILABLE, "application/json",
          ready ? "{\"status\":\"ready\"}" : "{\"status\":\"no healthy backend\"}"), null, null);
      return true;
    }
    if (path.equals("/metrics") && method.equals(HttpMethod.GET)) {
      local(req, text(HttpResponseStatus.OK, "text/plain; version=0.0.4; charset=utf-8", px.metrics().scrape()), null, null);
      return true;
    }
    String allowed = LOCAL_METHODS.get(path);
    if (allowed != null) {
      rejectLocally(req, HttpResponseStatus.METHOD_NOT_ALLOWED, method + " " + path + " (expected: " + allowed + ")",
          null, "unknown", HttpHeaderNames.ALLOW, allowed.replace(" or ", ", "));
      return true;
    }
    return false;
  }

  private RequestView parse(Endpoint endpoint, FullHttpRequest req) throws InvalidRequestException {
    ByteBuf body = req.content();
    HttpHeaders headers = req.headers();
    if (body.hasArray()) {
      return px.parser().parse(endpoint, body.array(), body.arrayOffset() + body.readerIndex(),
          body.readableBytes(), headers::get);
    }
    return px.parser().parse(endpoint, ByteBufUtil.getBytes(body), headers::get);
  }

  private void startExchange(FullHttpRequest req, String tag, RequestView view, int[] promptTokens, Timeline timeline) {
    startExchange(req, tag, view, promptTokens, timeline, null);
  }

  private void startExchange(FullHttpRequest req, String tag, RequestView view, int[] promptTokens, Timeline timeline,
      ModelCatalog.Resolved model) {
    String requestId = requestId(req);
    exchange = new ProxyExchange(px, this, ctx, req, tag, view, promptTokens, requestId, timeline, model);
    exchange.start();
  }

  /** A generation request the router answers itself, as the engine would. */
  private record Refusal(HttpResponseStatus status, String message, String param) {}

  /** Where the request's model may go (see {@link ModelCatalog#resolve}). */
  private ModelCatalog.Resolved resolveModel(FullHttpRequest req, RequestView view) {
    return px.models().resolve(view, () -> ByteBufUtil.getBytes(req.content()), px.backends().all());
  }

  /**
   * vLLM's answer when no backend serves the model (404, no upstream request) or the prompt cannot fit
   * any serving backend's context (400, decided before tokenizing); {@code null} otherwise.
   */
  private Refusal refusal(RequestView view, ModelCatalog.Resolved model) {
    if (model.unknown()) {
      px.discovery().unknownModelRequested(); // loaded on an engine directly since the last read?
      return new Refusal(HttpResponseStatus.NOT_FOUND, "The model `" + model.requested() + "` does not exist.", "model");
    }
    String tooLong = px.models().tooLong(view, model);
    if (tooLong != null) {
      return new Refusal(HttpResponseStatus.BAD_REQUEST, tooLong,
          tooLong.contains(" characters (") ? "input_text" : "input_tokens");
    }
    return null;
  }

  /** What a body worker made of a large request: its view and prompt tokens, or why it is refused. */
  private record Parsed(RequestView view, int[] tokens, InvalidRequestException invalid, RuntimeException failure,
      ModelCatalog.Resolved model, Refusal refused, EngineTokenRequest engineRequest, Endpoint engineEndpoint) {
    Parsed(RequestView view, int[] tokens, InvalidRequestException invalid, RuntimeException failure) {
      this(view, tokens, invalid, failure, null, null);
    }

    Parsed(RequestView view, int[] tokens, InvalidRequestException invalid, RuntimeException failure,
        ModelCatalog.Resolved model, Refusal refused) {
      this(view, tokens, invalid, failure, model, refused, null, null);
    }
  }

  /**
   * Whether the policy reads anything of {@code view}'s prompt ({@link RoutingPolicy#reads}): if not,
   * neither the engine nor the router's tokenizer is asked for its tokens, and the core routes it with
   * no index work.
   */
  private boolean readsPrompt(RequestView view) {
    return px.core().policy().reads(view.sessionKey()) != PromptReads.NONE;
  }

  /** The {@code /tokenize} request for {@code view}, or {@code null} when the engine is not to be asked. */
  private static EngineTokenRequest engineRequest(RequestView view, ModelCatalog.Resolved model) {
    try {
      return EngineTokenizer.prepare(view, engineModel(view, model));
    } catch (IllegalArgumentException e) {
      LOG.log(Level.ERROR, "cannot build the engine's /tokenize request; routing on the router's tokens", e);
      return null;
    }
  }

  private static String engineModel(RequestView view, ModelCatalog.Resolved model) {
    return model != null && model.served() != null ? model.served() : view.model();
  }

  /**
   * Asks the engine for the request's tokens ({@link EngineTokenizer}), then starts the exchange with
   * them; on a fallback (or a prompt shape the engine is not asked about, {@code ask == null}) with the
   * router's own tokens, computed off the event loop for a large body as usual. The request stays owned
   * by this handler while it waits.
   */
  private void askEngine(Endpoint endpoint, FullHttpRequest req, String tag, RequestView view, Timeline timeline,
      ModelCatalog.Resolved model, EngineTokenRequest ask) {
    boolean large = req.content().readableBytes() >= OFFLOAD_BODY_BYTES;
    if (ask == null) {
      if (large) {
        parseOffLoop(endpoint, req, tag, timeline, false);
      } else {
        startExchange(req, tag, view, null, timeline, model);
      }
      return;
    }
    List<Backend> candidates = px.backends().routable(Set.of());
    if (model != null) {
      candidates.removeIf(b -> !model.serves(b));
    }
    HttpHeaders pass = null;
    String auth = req.headers().get(HttpHeaderNames.AUTHORIZATION);
    if (auth != null) {
      pass = new io.netty.handler.codec.http.DefaultHttpHeaders().set(HttpHeaderNames.AUTHORIZATION, auth);
    }
    offLoop = requestId(req);
    px.engineTokens().tokens(ask, candidates, pass, ctx.executor(), tokens -> {
      offLoop = null;
      if (closing) {
        cancelledBeforeExchange(req, tag, model); // the client went away while the engine tokenized
      } else if (tokens != null) {
        startExchange(req, tag, view, tokens, timeline, model);
      } else if (large) {
        parseOffLoop(endpoint, req, tag, timeline, false);
      } else {
        startExchange(req, tag, view, null, timeline, model);
      }
    }, () -> ReferenceCountUtil.safeRelease(req)); // the loop shut down while the engine tokenized
  }

  /**
   * Parses and tokenizes a large body on a body worker, then continues on this connection's event
   * loop: 400 on a malformed body, else the exchange with the tokens already computed. The request
   * stays owned by this handler throughout (the worker only reads its content).
   */
  private void parseOffLoop(Endpoint endpoint, FullHttpRequest req, String tag, Timeline timeline) {
    parseOffLoop(endpoint, req, tag, timeline, true);
  }

  /** As above; {@code askEngine}: whether a model tokenized by the engine asks it (false: its fallback). */
  private void parseOffLoop(Endpoint endpoint, FullHttpRequest req, String tag, Timeline timeline, boolean askEngine) {
    OffLoopRouting.Droppable work = new OffLoopRouting.Droppable() {
      @Override
      public void run() {
        Parsed result = parsed(endpoint, req, askEngine);
        try {
          ctx.executor().execute(() -> onParsed(req, tag, timeline, result));
        } catch (java.util.concurrent.RejectedExecutionException shuttingDown) {
          ReferenceCountUtil.safeRelease(req);
        }
      }

      @Override
      public void dropped() {
        ReferenceCountUtil.safeRelease(req); // the router closed with the body still queued
      }
    };
    try {
      offLoop = requestId(req);
      px.bodyWorkers().execute(work);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      offLoop = null;
      rejectLocally(req, HttpResponseStatus.SERVICE_UNAVAILABLE,
          "too many large request bodies waiting to be read; retry later", tag);
    }
  }

  /** Parses and tokenizes {@code req} on a body worker, for {@link #parseOffLoop}. */
  private Parsed parsed(Endpoint endpoint, FullHttpRequest req, boolean askEngine) {
    try {
      RequestView view = parse(endpoint, req);
      ModelCatalog.Resolved model = resolveModel(req, view);
      Refusal refused = refusal(view, model); // before tokenizing: a prompt too long for any is not
      boolean reads = readsPrompt(view);
      boolean engine = askEngine && refused == null && reads && px.engineTokens() != null
          && px.engineTokens().applies(view.model());
      return refused != null ? new Parsed(view, null, null, null, model, refused)
          : engine ? new Parsed(view, null, null, null, model, null, engineRequest(view, model), endpoint)
          : new Parsed(view, reads ? px.core().tokens(model.tokenized(view)) : null, null, null, model, null);
    } catch (InvalidRequestException e) {
      return new Parsed(null, null, e, null);
    } catch (dev.kvroute.core.tokenize.ChatTemplateException e) { // the engine's 400 for this template
      return new Parsed(null, null, new InvalidRequestException(e.getMessage(), null), null);
    } catch (RuntimeException e) {
      return new Parsed(null, null, null, e);
    }
  }

  private void onParsed(FullHttpRequest req, String tag, Timeline timeline, Parsed parsed) {
    offLoop = null;
    if (closing) {
      // the client went away while its body was being read
      cancelledBeforeExchange(req, tag, parsed.invalid() == null && parsed.failure() == null ? parsed.model() : null);
      return;
    }
    if (parsed.invalid() != null) {
      rejectLocally(req, HttpResponseStatus.BAD_REQUEST, parsed.invalid().getMessage(), parsed.invalid().param(), tag);
    } else if (parsed.failure() != null) {
      LOG.log(Level.ERROR, "request parser failed on " + req.uri(), parsed.failure());
      rejectLocally(req, HttpResponseStatus.INTERNAL_SERVER_ERROR, "cannot read the request: " + parsed.failure(), tag);
    } else if (parsed.refused() != null) {
      px.metrics().modelRequest(parsed.model().label(), Outcome.REJECTED, 0, -1);
      rejectLocally(req, parsed.refused().status(), parsed.refused().message(), parsed.refused().param(), tag);
    } else if (parsed.engineEndpoint() != null) {
      askEngine(parsed.engineEndpoint(), req, tag, parsed.view(), timeline, parsed.model(), parsed.engineRequest());
    } else {
      startExchange(req, tag, parsed.view(), parsed.tokens(), timeline, parsed.model());
    }
  }

  /**
   * The client left (or the router, closing, answered 503) before its request reached an exchange:
   * counted as cancelled (unavailable) with no backend, and by model when the body named one (as
   * every generation request is, whatever its outcome).
   */
  private void cancelledBeforeExchange(FullHttpRequest req, String tag, ModelCatalog.Resolved model) {
    ReferenceCountUtil.safeRelease(req);
    Outcome outcome = answeredAtShutdown ? Outcome.UNAVAILABLE : Outcome.CANCELLED;
    px.metrics().request("none", tag, outcome, 0);
    if (model != null) {
      px.metrics().modelRequest(model.label(), outcome, 0, -1);
    }
  }

  /** Answers a request the router refuses (never reaches a backend). */
  private void rejectLocally(FullHttpRequest req, HttpResponseStatus status, String message, String tag) {
    rejectLocally(req, status, message, null, tag);
  }

  /** As above, with extra response headers given as name, value pairs. */
  private void rejectLocally(FullHttpRequest req, HttpResponseStatus status, String message, String param, String tag,
      CharSequence... headers) {
    boolean keepAlive = keepAlive(req);
    FullHttpResponse r = HttpErrors.response(ctx.alloc(), status, message, param, keepAlive);
    r.headers().set(Headers.X_REQUEST_ID, requestId(req));
    for (int i = 0; i + 1 < headers.length; i += 2) {
      r.headers().set(headers[i], headers[i + 1]);
    }
    local(req, r, tag, Outcome.REJECTED);
  }

  /** Whether the connection may serve another request after {@code req}: not while draining. */
  private boolean keepAlive(FullHttpRequest req) {
    return HttpUtil.isKeepAlive(req) && !px.clients().draining();
  }

  /** Writes a locally built response and releases the request. */
  private void local(FullHttpRequest req, FullHttpResponse response, String tag, Outcome outcome) {
    boolean keepAlive = keepAlive(req) && !response.headers().contains(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE, true);
    Headers.connection(response.headers(), req.protocolVersion(), keepAlive);
    ReferenceCountUtil.safeRelease(req);
    if (outcome != null) {
      px.metrics().request("none", tag, outcome, 0);
    }
    ctx.writeAndFlush(response).addListener((ChannelFutureListener) f -> exchangeDone(f.isSuccess() && keepAlive));
  }

  private FullHttpResponse text(HttpResponseStatus status, String contentType, String body) {
    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
        Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
    r.headers()
        .set(HttpHeaderNames.CONTENT_TYPE, contentType)
        .setInt(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
    return r;
  }

  /**
   * {@code GET /v1/models}: the merged list of the routable backends' models ({@link ModelList}). 503
   * when no backend is routable, 502 when none answered.
   */
  private void mergedModels(FullHttpRequest req) {
    List<Backend> backends = px.backends().routable(Set.of());
    boolean keepAlive = keepAlive(req);
    HttpHeaders forward = new DefaultHttpHeaders();
    String auth = req.headers().get(HttpHeaderNames.AUTHORIZATION);
    if (auth != null) {
      forward.set(HttpHeaderNames.AUTHORIZATION, auth);
    }
    String requestId = requestId(req);
    HttpVersion version = req.protocolVersion();
    ReferenceCountUtil.safeRelease(req);
    long start = px.ticker().nanos();
    if (backends.isEmpty()) {
      FullHttpResponse r = HttpErrors.response(ctx.alloc(), HttpResponseStatus.SERVICE_UNAVAILABLE, "no healthy backend", null, keepAlive);
      Headers.connection(r.headers(), version, keepAlive);
      r.headers().set(Headers.X_REQUEST_ID, requestId);
      r.headers().set(HttpHeaderNames.RETRY_AFTER, Long.toString(px.config().healthCheck().retryAfterSeconds()));
      px.metrics().request("none", "models", Outcome.UNAVAILABLE, 0);
      ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> exchangeDone(f.isSuccess() && keepAlive));
      return;
    }
    offLoop = requestId;
    ModelList.ask(px, backends, forward)
        .thenAccept(models -> ctx.executor().execute(() -> {
          offLoop = null;
          FullHttpResponse r;
          Outcome outcome;
          if (!models.anyAnswered()) {
            r = HttpErrors.response(ctx.alloc(), HttpResponseStatus.BAD_GATEWAY, "no backend answered /v1/models", null, keepAlive);
            outcome = Outcome.FAILED;
          } else {
            r = text(HttpResponseStatus.OK, "application/json", models.json());
            outcome = Outcome.SUCCESS;
          }
          r.headers().set(Headers.X_REQUEST_ID, requestId);
          Headers.connection(r.headers(), version, keepAlive);
          px.metrics().request("none", "models", outcome, px.ticker().nanos() - start);
          if (closing) {
            r.release();
            return;
          }
          ctx.writeAndFlush(r).addListener((ChannelFutureListener) f -> exchangeDone(f.isSuccess() && keepAlive));
        }));
  }

  private static String endpointTag(Endpoint e) {
    switch (e) {
      case CHAT_COMPLETIONS:
        return "chat";
      case COMPLETIONS:
        return "completions";
      case SGLANG_GENERATE:
        return "generate";
      default:
        return "other";
    }
  }

  /**
   * The client's {@code X-Request-Id} when present and reasonable (not blank, at most 200
   * characters), else a new random id, which is then set on {@code req} in place of the client's:
   * a request that leaves the loop before its exchange (body read on a worker, the engine tokenizing)
   * keeps one id for its shutdown 503, its exchange, its upstream request and its logs.
   */
  private static String requestId(FullHttpRequest req) {
    String id = req.headers().get(Headers.X_REQUEST_ID);
    if (id != null && !id.isBlank() && id.length() <= 200) {
      return id;
    }
    ThreadLocalRandom r = ThreadLocalRandom.current();
    id = newRequestId(r.nextLong(), r.nextLong());
    req.headers().set(Headers.X_REQUEST_ID, id);
    return id;
  }

  private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

  /** {@code hi} and {@code lo} as 32 lowercase hex digits ({@code %016x%016x}, without the formatter's cost). */
  static String newRequestId(long hi, long lo) {
    byte[] out = new byte[32];
    for (int i = 15; i >= 0; i--) {
      out[i] = HEX[(int) (hi & 0xf)];
      out[i + 16] = HEX[(int) (lo & 0xf)];
      hi >>>= 4;
      lo >>>= 4;
    }
    return new String(out, StandardCharsets.US_ASCII);
  }

  private void releaseQueued() {
    Object m;
    while ((m = queued.poll()) != null) {
      ReferenceCountUtil.safeRelease(m);
    }
  }
}
