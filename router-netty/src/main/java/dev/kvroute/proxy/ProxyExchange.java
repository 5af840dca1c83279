package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.admission.AdmissionQueue;
import dev.kvroute.core.admission.RequestFields;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.proxy.config.AdmissionConfig;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.EventLoop;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.Future;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One client request proxied to a backend: routing, the upstream attempt(s), the relay of the
 * response, and exactly-once release of everything the request holds.
 *
 * <p><b>Attempts.</b> Each attempt routes among the routable backends not yet tried (generation
 * requests through {@link RouterCore}, taking a load lease; pass-through requests round-robin),
 * takes a connection from the pool of the client's event loop and writes the original body bytes.
 * A pooled connection that closes before any response byte is retried once on a fresh connection to
 * the same backend. A connect failure or timeout, a first-byte timeout, a connection closed before
 * the response, or a 502/503 status are retried on another backend while retries remain and nothing
 * has been written to the client; a 4xx never is.
 *
 * <p><b>Admission.</b> A generation request first passes {@link Admission}: it starts at once when a
 * backend has a free slot, else waits in the router's queue (routed when it leaves) or is answered 429.
 *
 * <p><b>The response head.</b> The backend's status line and headers are held until its first body
 * byte (or the end of a bodiless response), so a backend that answers and then sends nothing within
 * {@code timeouts.firstByte} ends in a retry or a JSON 504, never an empty 200. A stream that breaks
 * off after its head went out ends, for SSE, as vLLM ends a stream on an error: {@code data:
 * {"error": ...}} then {@code data: [DONE]}.
 *
 * <p><b>Relay and backpressure.</b> Both channels have auto-read off. The upstream channel is read
 * once at a time: every response object of a read is written to the client, the writes are flushed
 * when the read completes, and the next read is requested only when the last write has succeeded and
 * the client channel is writable — otherwise when it becomes writable again. Content buffers are
 * passed through as they arrive, so SSE bytes are never re-framed; the client connection gets the
 * router's own framing (the upstream {@code Content-Length}, else chunked).
 *
 * <pre>
 *  backend ──read()──▶ upstream channel ──HttpContent──▶ client.write() ──flush at read end──▶ client
 *     ▲                                                        │
 *     └──── next read() only after the write succeeded ◀───────┘ and client.isWritable()
 * </pre>
 *
 * <p><b>Timeouts.</b> One timer: until the first response body byte, {@code timeouts.firstByte} from
 * the request write; afterwards {@code timeouts.idle} from each upstream read request, counted only
 * while the router waits for the backend (never while the client is slow). A second timer runs while
 * the router waits for the client instead (a write to it not yet done, or its channel unwritable):
 * a client that accepts no bytes for {@code timeouts.client} is disconnected and the exchange ends
 * as cancelled, so a client that stops reading cannot hold its lease and upstream request forever.
 *
 * <p><b>Ending.</b> {@link #finish} runs exactly once: it releases the load lease, closes (aborts) an
 * upstream request still running, records usage and metrics, releases the request body and hands
 * the client connection back to {@link ProxyHandler}. A client that goes away closes the upstream
 * connection at once, which is how vLLM and SGLang abort a request.
 *
 * <p>One unit of about 1,100 lines because it is one state machine: attempts, both timers, the relay
 * and the exactly-once finish read and write the same per-request state on one event loop. Its pure
 * parts live beside it: {@link HeaderRewrite} (headers), {@link UsageScanner} (usage), {@link SseEvents}
 * (an SSE body in whole events), {@link Timeline} (timing).
 *
 * <p>Not thread-safe: everything runs on the client channel's event loop, which is also the upstream
 * channel's.
 */
final class ProxyExchange implements UpstreamHandler.Listener, Admission.Waiter {
  private static final System.Logger LOG = System.getLogger(ProxyExchange.class.getName());

  private final ProxyContext px;
  private final ProxyHandler owner;
  private final ChannelHandlerContext client;
  private final EventLoop loop;
  private final FullHttpRequest request;
  private final String endpointTag;
  private final RequestView view;
  /** {@link #view} as the core tokenizes it, once asked ({@link #tokenizedView}). */
  private RequestView coreView;
  private final int[] promptTokens;
  private final String requestId;
  private final boolean clientKeepAlive;
  private final Timeline timeline;
  /** Where the request's model may go, or {@code null} (pass-through requests). */
  private final ModelCatalog.Resolved model;
  private final Set<BackendId> tried = new HashSet<>(4);
  private int retriesLeft;
  private HttpResponseStatus failureStatus = HttpResponseStatus.BAD_GATEWAY;
  private String failureMessage = "no backend answered";

  // the current attempt
  private Backend backend;
  private RouterCore.Routed routed;
  private UpstreamConnection upstream;
  private boolean staleRetryUsed;
  private boolean skippingInformational;

  // the response
  /** The backend's status line and headers arrived (held until the first body byte). */
  private boolean headSeen;
  /** The head, as the client will get it, held until the first body byte arrives. */
  private HttpResponse heldHead;
  /** The head was written to the client: no retry, no error response from now on. */
  private boolean responseStarted;
  /**
   * An SSE body the router can end with an error event: not compressed, and framed by chunks or the
   * close (a Content-Length body cannot take the extra bytes).
   */
  private boolean sse;
  /** An SSE body relayed in whole events (to end it on an event boundary); null for other bodies. */
  private SseEvents sseEvents;
  private boolean firstByteSeen;
  private boolean closeClientAfterResponse;
  private boolean upstreamKeepAlive;
  private int status;
  private UsageScanner usage;
  private ChannelFuture lastClientWrite;
  private boolean readAfterWritable;
  private boolean upstreamReadPending;
  private long readRequestedNanos;
  private long firstByteDeadlineNanos;
  private ScheduledFuture<?> timer;
  private long timerDeadlineNanos;
  private ScheduledFuture<?> clientTimer;
  private boolean done;

  // admission
  /** The queue ticket while the request waits in the router's queue, else {@code null}. */
  private AdmissionQueue.Ticket<Admission.Waiter> ticket;
  /** Admitted and not yet routed: counts against the backends' free slots until it is. */
  private boolean admissionPending;

  /**
   * @param request the aggregated request; this exchange owns it and releases it when done
   * @param view the routing view for generation requests, or {@code null} for pass-through
   * @param promptTokens the view's prompt tokens when already computed (large bodies, or the engine's
   *     tokens), else {@code null}
   * @param requestId the request id (the client's {@code X-Request-Id} or a generated one)
   * @param model the backends serving the request's model and its index namespace, or {@code null}
   *     to route among every backend in the default namespace
   */
  ProxyExchange(
      ProxyContext px,
      ProxyHandler owner,
      ChannelHandlerContext client,
      FullHttpRequest request,
      String endpointTag,
      RequestView view,
      int[] promptTokens,
      String requestId,
      Timeline timeline,
      ModelCatalog.Resolved model) {
    this.px = px;
    this.model = model;
    this.owner = owner;
    this.client = client;
    this.loop = client.channel().eventLoop();
    this.request = request;
    this.endpointTag = endpointTag;
    this.view = view;
    this.promptTokens = promptTokens;
    this.requestId = requestId;
    this.clientKeepAlive = HttpUtil.isKeepAlive(request);
    this.timeline = timeline;
    this.retriesLeft = px.config().retries().maxRetries();
  }

  /**
   * Starts the request: a generation request goes through admission first (at once when a backend
   * has a free slot and nobody is queued, else through the router's queue, or a 429); others start
   * their first attempt at once.
   */
  void start() {
    Admission admission = px.admission();
    if (view == null || !admission.enabled()) {
      attempt();
      return;
    }
    AdmissionConfig ac = admission.config();
    HttpHeaders h = request.headers();
    RequestFields[] fields = {null};
    java.util.function.Supplier<RequestFields> body = () -> {
      if (fields[0] == null) {
        ByteBuf c = request.content();
        fields[0] = c.hasArray()
            ? RequestFields.read(c.array(), c.arrayOffset() + c.readerIndex(), c.readableBytes())
            : RequestFields.read(ByteBufUtil.getBytes(c), 0, c.readableBytes());
      }
      return fields[0];
    };
    String auth = h.get(HttpHeaderNames.AUTHORIZATION);
    String tenant = Admission.tenantKey(ac.tenant(), auth, ac.tenant().equals("user") ? body.get().user() : null, h::get);
    java.util.function.IntSupplier priority = () -> priority(ac, body.get(), h, tenant, auth);
    @SuppressWarnings("unchecked")
    AdmissionQueue.Ticket<Admission.Waiter>[] out = new AdmissionQueue.Ticket[1];
    long received = timeline.firstNanos(Lifecycle.RECEIVED);
    switch (admission.admit(this, priority, tenant, request.content().readableBytes(), received, out)) {
      case NOW:
        admissionPending = true;
        attempt();
        break;
      case QUEUED:
        ticket = out[0];
        timeline.mark(Lifecycle.QUEUED, px.ticker().nanos(), Admission.priorityClass(ticket.priority()));
        break;
      default:
        long retry = admission.retryAfterSeconds();
        respondRateLimited("the router's queue is full (every backend is saturated); retry after " + retry + " s", retry);
    }
  }

  /**
   * A request's priority: the body's {@code priority} (vLLM's field), else the priority header, else
   * the tenant's configured priority (by tenant key, or by the API key itself), else 0.
   */
  private static int priority(AdmissionConfig ac, RequestFields fields, HttpHeaders h, String tenant, String auth) {
    if (fields.priority() != null) {
      return fields.priority();
    }
    String header = h.get(ac.priorityHeader());
    if (header != null) {
      try {
        return Integer.parseInt(header.trim());
      } catch (NumberFormatException ignored) {
        // not a number: as if absent
      }
    }
    Integer p = ac.tenantPriorities().get(tenant);
    if (p == null && auth != null) {
      String key = auth.trim();
      p = ac.tenantPriorities().get(key.regionMatches(true, 0, "Bearer ", 0, 7) ? key.substring(7).trim() : key);
    }
    return p == null ? 0 : p;
  }

  @Override
  public EventLoop loop() {
    return loop;
  }

  /** Admitted from the router's queue (on this exchange's event loop): route and send now. */
  @Override
  public void admitted() {
    ticket = null;
    admissionPending = true;
    if (done) {
      settleAdmission();
      return;
    }
    attempt();
  }

  /** Refused while queued: deadline passed, or shed for a better request. */
  @Override
  public void refused(String reason, String message, long retryAfterSeconds) {
    ticket = null;
    if (!done) {
      respondRateLimited(message, retryAfterSeconds);
    }
  }

  private void settleAdmission() {
    if (admissionPending) {
      admissionPending = false;
      px.admission().routed();
    }
  }

  private void respondRateLimited(String message, long retryAfterSeconds) {
    responseStarted = true;
    boolean keepAlive = clientKeepAlive && !px.clients().draining();
    FullHttpResponse r = HttpErrors.rateLimited(client.alloc(), message, retryAfterSeconds, keepAlive);
    r.headers().set(Headers.X_REQUEST_ID, requestId);
    status = 429;
    client.writeAndFlush(r).addListener((ChannelFutureListener) f -> finish(Outcome.RATE_LIMITED, f.isSuccess() && keepAlive));
  }

  private void attempt() {
    backend = null;
    routed = null;
    staleRetryUsed = false;
    skippingInformational = false;
    headSeen = false;
    heldHead = null;
    sse = false;
    if (sseEvents != null) {
      sseEvents.release();
      sseEvents = null;
    }
    usage = null;
    List<Backend> candidates = px.backends().routable(tried);
    if (model != null) {
      candidates.removeIf(b -> !model.serves(b)); // never a replica that does not serve the model
      if (px.config().models().loraAffinity()) {
        candidates = LoraAffinity.prefer(candidates, model.adapter(),
            b -> px.core().loads().load(b.id()).inFlightRequests(), px.config().policy().balanceAbsThreshold());
      }
    }
    if (candidates.isEmpty()) {
      long retryAfter = px.config().healthCheck().retryAfterSeconds();
      if (tried.isEmpty() && model != null && model.served() != null && !model.serving().isEmpty()) {
        respondError(HttpResponseStatus.SERVICE_UNAVAILABLE, "no healthy backend serves model " + model.served()
            + " (served by " + String.join(", ", ModelCatalog.names(model.serving())) + ")", Outcome.UNAVAILABLE,
            retryAfter);
      } else if (tried.isEmpty()) {
        respondError(HttpResponseStatus.SERVICE_UNAVAILABLE, "no healthy backend", Outcome.UNAVAILABLE, retryAfter);
      } else {
        respondError(failureStatus, failureMessage, Outcome.FAILED);
      }
      return;
    }
    if (view != null && candidates.size() > 1 && px.admission().enabled()) {
      candidates = unsaturated(candidates);
    }
    if (view != null) {
      List<BackendId> ids = new ArrayList<>(candidates.size());
      for (Backend b : candidates) {
        ids.add(b.id());
      }
      long t0 = px.ticker().nanos();
      if (promptTokens != null && request.content().readableBytes() >= ProxyHandler.OFFLOAD_BODY_BYTES) {
        // a large prompt: its index work leaves the event loop, as its tokenizing did
        if (!OffLoopRouting.route(px, loop, promptTokens, view.sessionKey(), namespace(), ids,
            (r, failure) -> onRouted(ids, t0, r, failure))) {
          respondError(HttpResponseStatus.SERVICE_UNAVAILABLE,
              "too many large requests waiting to be routed; retry later", Outcome.UNAVAILABLE);
        }
        return;
      }
      if (promptTokens == null && request.content().readableBytes() >= ProxyHandler.COLD_TEXT_CODE_POINTS
          && px.core().uncachedCodePoints(tokenizedView()) >= ProxyHandler.COLD_TEXT_CODE_POINTS) {
        // much new text to encode (a new conversation, a long paste): not on the loop every other
        // connection shares; the view reads its text from the body, kept until the routing is back
        // (the request, not its content: its arrival buffers go with its last release)
        FullHttpRequest kept = request.retain();
        if (OffLoopRouting.encodingWaits(px)) {
          // the workers are busy (a burst of new conversations): route on what is known of the prompt
          // now, forward it, and encode it for the index on a worker afterwards
          RouterCore.RoutedAhead ahead;
          try {
            ahead = px.core().routeAhead(tokenizedView(), namespace(), ids);
          } catch (RuntimeException e) {
            kept.release();
            onRouted(ids, t0, null, e);
            return;
          }
          if (ahead != null) {
            px.metrics().routedAhead();
            OffLoopRouting.record(px, ahead, kept::release);
            onRouted(ids, t0, ahead, null);
            return;
          }
        }
        if (OffLoopRouting.route(px, loop, tokenizedView(), namespace(), ids, kept::release,
            (r, failure) -> onRouted(ids, t0, r, failure))) {
          return;
        }
        kept.release(); // the workers are full: route here after all
      }
      RouterCore.Routed r;
      try {
        // tokens given for a small body are the engine's (--tokenizer engine); else the core tokenizes
        r = promptTokens != null ? px.core().route(promptTokens, view.sessionKey(), namespace(), ids)
            : px.core().route(tokenizedView(), namespace(), ids);
      } catch (RuntimeException e) {
        onRouted(ids, t0, null, e);
        return;
      }
      onRouted(ids, t0, r, null);
      return;
    }
    backend = px.backends().pickPassthrough(candidates);
    routedTo();
  }

  /** Continues a generation request once the core routed it ({@code r}) or failed to. */
  private void onRouted(List<BackendId> ids, long t0, RouterCore.Routed r, RuntimeException failure) {
    if (done || responseStarted) {
      // the client went away (or the request timed out, or the router closing answered it) while a
      // large prompt was being routed
      if (r != null) {
        r.lease().releaseUnserved();
      }
      return;
    }
    if (failure instanceof IllegalStateException) {
      // every candidate was removed between the snapshot and the decision
      tried.addAll(ids);
      attempt();
      return;
    }
    if (failure instanceof dev.kvroute.core.tokenize.ChatTemplateException) { // the engine's 400
      respondError(HttpResponseStatus.BAD_REQUEST, failure.getMessage(), Outcome.REJECTED);
      return;
    }
    if (failure != null) {
      LOG.log(Level.ERROR, requestId + ": routing failed", failure);
      respondError(HttpResponseStatus.INTERNAL_SERVER_ERROR, "routing failed: " + failure, Outcome.FAILED);
      return;
    }
    px.metrics().decision(r.decision().rule(), px.ticker().nanos() - t0);
    Backend chosen = px.backends().get(r.decision().backend());
    if (chosen == null) {
      r.lease().releaseUnserved();
      tried.add(r.decision().backend());
      attempt();
      return;
    }
    routed = r;
    backend = chosen;
    px.metrics().predicted(chosen.id().name(), r);
    routedTo();
  }

  private void routedTo() {
    tried.add(backend.id());
    settleAdmission(); // the lease now counts on the backend
    timeline.mark(Lifecycle.ROUTED, px.ticker().nanos(), backend.id().name());
    connect(false);
  }

  /** The candidates with a free admission slot, or all of them when none has one. */
  private List<Backend> unsaturated(List<Backend> candidates) {
    List<Backend> open = new ArrayList<>(candidates.size());
    for (Backend b : candidates) {
      if (!px.admission().saturated(b)) {
        open.add(b);
      }
    }
    return open.isEmpty() ? candidates : open;
  }

  private void connect(boolean fresh) {
    Future<UpstreamConnection> f = px.pool().acquire(backend, loop, fresh);
    if (f.isDone()) {
      onConnect(f);
    } else {
      f.addListener(x -> onConnect(f));
    }
  }

  private void onConnect(Future<UpstreamConnection> f) {
    if (done) {
      if (f.isSuccess()) {
        px.pool().release(f.getNow(), false);
      }
      return;
    }
    if (!f.isSuccess()) {
      Throwable cause = f.cause();
      boolean timeout = cause instanceof ConnectTimeoutException;
      upstreamFailed(timeout ? "connect_timeout" : "connect",
          "cannot connect to backend " + backend.id() + ": "
              + Transport.connectFailure(cause, px.config().timeouts().connect()),
          timeout ? HttpResponseStatus.GATEWAY_TIMEOUT : HttpResponseStatus.BAD_GATEWAY);
      return;
    }
    UpstreamConnection conn = f.getNow();
    upstream = conn;
    conn.handler().listener(this);
    long now = px.ticker().nanos();
    timeline.mark(Lifecycle.CONNECTED, now, conn.reused() ? "pooled" : "new");
    conn.channel().writeAndFlush(upstreamRequest()).addListener((ChannelFutureListener) w -> {
      if (!w.isSuccess()) {
        // the close is reported through onUpstreamInactive (stale-connection retry or failure)
        w.channel().close();
      }
    });
    firstByteDeadlineNanos = now + px.config().timeouts().firstByte().toNanos();
    armTimer(firstByteDeadlineNanos);
    readUpstream();
  }

  private FullHttpRequest upstreamRequest() {
    SocketAddress remote = client.channel().remoteAddress();
    String ip = remote instanceof InetSocketAddress ? ((InetSocketAddress) remote).getAddress().getHostAddress() : null;
    // an alias: the body names the served model instead (only that string differs)
    io.netty.buffer.ByteBuf body = model != null && model.rewrittenBody() != null
        ? io.netty.buffer.Unpooled.wrappedBuffer(model.rewrittenBody())
        : AggregatedRequest.forwardedBody(request);
    HttpHeaders h = HeaderRewrite.upstreamRequest(request.headers(), request.method(),
        body.readableBytes(), backend.config().authority(), requestId, ip);
    return new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, request.method(),
        backend.config().basePath() + request.uri(), body, h, new DefaultHttpHeaders());
  }

  @Override
  public void onUpstreamMessage(HttpObject msg) {
    if (done) {
      ReferenceCountUtil.release(msg);
      return;
    }
    if (msg instanceof HttpResponse) {
      if (!onResponseHead((HttpResponse) msg)) {
        ReferenceCountUtil.release(msg);
        return;
      }
    }
    if (msg instanceof HttpContent) {
      onResponseContent((HttpContent) msg);
    } else {
      ReferenceCountUtil.release(msg);
    }
  }

  /** Handles the status line and headers; returns whether content of this message should be relayed. */
  private boolean onResponseHead(HttpResponse resp) {
    if (resp.decoderResult().isFailure()) {
      failBeforeOrDuringResponse("protocol", "backend " + backend.id() + " sent a malformed response: "
          + Transport.failure(resp.decoderResult().cause()), HttpResponseStatus.BAD_GATEWAY);
      return false;
    }
    int code = resp.status().code();
    if (code < 100 || code > 999 || code == 101) {
      // RFC 9112 4: three digits (Netty's parser takes any int): "0" is no 1xx to wait past, nor
      // "2000" a status to relay; nginx answers 502 for both. A 101 switches protocols the router
      // never asked to switch: no interim response either
      failBeforeOrDuringResponse("protocol", "backend " + backend.id() + (code == 101
          ? " switched protocols unasked (101)" : " sent an invalid status code " + code), HttpResponseStatus.BAD_GATEWAY);
      return false;
    }
    if (code < 200) {
      // 1xx informational (the router never sends Expect upstream): skip it and its empty content
      skippingInformational = true;
      return false;
    }
    if ((code == 502 || code == 503) && canRetry() && anotherCandidate()) {
      // retried only when another backend can take it; otherwise the backend's answer is relayed
      backend.breaker().onFailure();
      px.metrics().upstreamError(backend.id().name(), "status_" + code);
      closeUpstream();
      cancelTimer();
      releaseLease();
      failureStatus = HttpResponseStatus.valueOf(code);
      failureMessage = "backend " + backend.id() + " answered " + code;
      retry("status_" + code);
      return false;
    }
    if (code >= 500) {
      backend.breaker().onFailure();
      px.metrics().upstreamError(backend.id().name(), "status_5xx");
    }
    // a success counts for the circuit only once the response is complete (onResponseContent): a
    // backend that answers 200 and then breaks every body must still open its circuit
    status = code;
    upstreamKeepAlive = HttpUtil.isKeepAlive(resp);
    if (code == 200 && view != null) {
      usage = UsageScanner.forContentType(resp.headers().get(HttpHeaderNames.CONTENT_TYPE));
    }
    headSeen = true;
    heldHead = clientResponse(resp);
    String type = resp.headers().get(HttpHeaderNames.CONTENT_TYPE);
    String encoding = resp.headers().get(HttpHeaderNames.CONTENT_ENCODING);
    // an error event can end it: its text is not compressed, nor its length fixed by Content-Length
    sse = type != null && type.regionMatches(true, 0, "text/event-stream", 0, 17)
        && (encoding == null || encoding.equalsIgnoreCase("identity")) && !HttpUtil.isContentLengthSet(heldHead);
    return true;
  }

  private HttpResponse clientResponse(HttpResponse resp) {
    HeaderRewrite.ClientHead head = HeaderRewrite.clientResponse(resp, backend.id().name(), requestId,
        request.method(), request.protocolVersion(),
        clientKeepAlive && !closeClientAfterResponse && !px.clients().draining());
    if (head.closeAfter()) {
      closeClientAfterResponse = true;
    }
    return new DefaultHttpResponse(HttpVersion.HTTP_1_1, resp.status(), head.headers());
  }

  private void onResponseContent(HttpContent c) {
    if (c.decoderResult().isFailure()) {
      // a malformed chunk size or trailer: Netty's decoder ends the body there with an empty last
      // content and discards everything after it on that connection. Relayed as an end, it made a
      // cut body look complete, and the pooled connection then swallowed the next request's
      // answer until its first-byte timeout. The connection is closed, never pooled, and the
      // client gets an error (or, once its response started, the cut it would get from a close).
      Throwable cause = c.decoderResult().cause();
      c.release();
      failBeforeOrDuringResponse("protocol", "backend " + backend.id() + " sent a malformed response body: "
          + Transport.failure(cause),
          HttpResponseStatus.BAD_GATEWAY);
      return;
    }
    boolean last = c instanceof LastHttpContent;
    if (skippingInformational || !headSeen) {
      c.release();
      if (last) {
        skippingInformational = false;
      }
      return;
    }
    if (!responseStarted) {
      if (!c.content().isReadable() && !last) {
        c.release(); // nothing to show yet: the head stays held
        return;
      }
      // the first body byte: only now does the client get the status line (so a backend that
      // answers 200 and then nothing ends in a clear error, not in an empty 200)
      responseStarted = true;
      lastClientWrite = client.write(heldHead);
      heldHead = null;
    }
    if (!firstByteSeen && (c.content().isReadable() || last)) {
      firstByteSeen = true;
      long now = px.ticker().nanos();
      timeline.mark(Lifecycle.FIRST_BYTE, now, null);
      if (routed != null && status >= 200 && status < 300) {
        // an error body's first byte is no first token: the index must not confirm its pages
        routed.lease().firstToken();
      }
      px.metrics().ttft(backend.id().name(), endpointTag, timeline.sinceStart(now));
      if (model != null) {
        px.metrics().modelTtft(model.label(), timeline.sinceStart(now));
      }
    }
    if (usage != null) {
      usage.feed(c.content(), last);
    }
    if (sse) {
      if (sseEvents == null) {
        sseEvents = new SseEvents();
      }
      ByteBuf relay = sseEvents.relay(c.content(), last, client.alloc());
      if (relay != c.content()) {
        c = c.replace(relay);
      }
      if (!last && !relay.isReadable()) {
        c.release(); // all of it waits for the rest of its event
        return;
      }
    }
    if (!last) {
      lastClientWrite = client.write(c);
      return;
    }
    HttpContent out = c;
    LastHttpContent lc = (LastHttpContent) c;
    if (!lc.trailingHeaders().isEmpty()) {
      out = new DefaultLastHttpContent(lc.content().retain());
      lc.release();
    }
    // the response is complete upstream: the connection goes back to the pool now
    if (status < 500) {
      backend.breaker().onSuccess();
    }
    cancelTimer();
    UpstreamConnection conn = upstream;
    upstream = null;
    if (conn != null) {
      px.pool().release(conn, upstreamKeepAlive);
    }
    ChannelFuture end = client.writeAndFlush(out);
    if (!end.isDone()) {
      armClientTimer();
    }
    end.addListener((ChannelFutureListener) f -> {
      if (f.isSuccess()) {
        finish(outcomeOf(status), clientKeepAlive && !closeClientAfterResponse);
      } else {
        onClientClosed();
      }
    });
  }

  @Override
  public void onUpstreamReadComplete() {
    upstreamReadPending = false;
    if (done || upstream == null) {
      return;
    }
    if (!responseStarted) {
      // nothing relayed yet (informational response, headers still partial, or a head held until
      // the first body byte): keep reading
      readUpstream();
      return;
    }
    client.flush();
    ChannelFuture w = lastClientWrite;
    if (w == null || w.isSuccess()) {
      readWhenWritable();
    } else if (!w.isDone()) {
      armClientTimer();
      w.addListener(f -> {
        if (f.isSuccess()) {
          readWhenWritable();
        }
      });
    }
    // a failed write closes the client channel, which ends the exchange through onClientClosed
  }

  private void readWhenWritable() {
    if (done || upstream == null) {
      return;
    }
    if (client.channel().isWritable()) {
      readUpstream();
    } else {
      readAfterWritable = true;
      armClientTimer();
    }
  }

  /** The client channel's writability changed: resume reading upstream once it is writable. */
  void onClientWritabilityChanged() {
    if (readAfterWritable && client.channel().isWritable() && !done && upstream != null) {
      readAfterWritable = false;
      readUpstream();
    }
  }

  private void readUpstream() {
    cancelClientTimer();
    upstreamReadPending = true;
    readRequestedNanos = px.ticker().nanos();
    if (firstByteSeen) {
      armTimer(readRequestedNanos + px.config().timeouts().idle().toNanos());
    }
    upstream.channel().read();
  }

  @Override
  public void onUpstreamInactive(Throwable cause) {
    if (done) {
      return;
    }
    UpstreamConnection conn = upstream;
    upstream = null;
    if (conn == null) {
      return;
    }
    String why = cause == null ? "" : ": " + Transport.failure(cause);
    if (!responseStarted) {
      if (conn.reused() && !staleRetryUsed && !headSeen) {
        // a pooled connection the backend had closed: once more on a fresh connection, same backend
        staleRetryUsed = true;
        cancelTimer();
        px.metrics().upstreamError(backend.id().name(), "stale_connection");
        px.metrics().retry("stale_connection");
        connect(true);
        return;
      }
      upstreamFailed("closed_before_response",
          "backend " + backend.id() + " closed the connection before responding" + why,
          HttpResponseStatus.BAD_GATEWAY);
      return;
    }
    backend.breaker().onFailure();
    px.metrics().upstreamError(backend.id().name(), "closed_mid_response");
    abortClient("backend " + backend.id() + " closed the connection mid-response" + why, HttpResponseStatus.BAD_GATEWAY);
  }

  private void failBeforeOrDuringResponse(String kind, String message, HttpResponseStatus statusIfNotStarted) {
    if (!responseStarted) {
      upstreamFailed(kind, message, statusIfNotStarted);
    } else {
      backend.breaker().onFailure();
      px.metrics().upstreamError(backend.id().name(), kind);
      abortClient(message, statusIfNotStarted);
    }
  }

  /**
   * An attempt failed before any response byte reached the client: count it against the backend,
   * release what the attempt holds, and retry on another backend if allowed, else answer the error.
   */
  private void upstreamFailed(String kind, String message, HttpResponseStatus statusIfFinal) {
    if (kind.equals("first_byte_timeout") && backend.busy()) {
      // busy is not broken: the engine answers its probe and reports a queue
      kind = "first_byte_timeout_busy";
    } else {
      backend.breaker().onFailure();
    }
    px.metrics().upstreamError(backend.id().name(), kind);
    closeUpstream();
    cancelTimer();
    releaseLease();
    failureStatus = statusIfFinal;
    failureMessage = message;
    LOG.log(Level.DEBUG, () -> requestId + ": " + message);
    if (canRetry()) {
      retry(kind);
    } else {
      respondError(failureStatus, failureMessage, Outcome.FAILED);
    }
  }

  /** The request's prefix-index namespace: its (base model, adapter), or the default one. */
  private long namespace() {
    return model == null ? 0L : model.namespace();
  }

  /**
   * The view as the router core tokenizes it ({@link ModelCatalog.Resolved#tokenized}), one object
   * for the exchange: the core's tokenizer hands a probe from one call to the next by the view's
   * identity.
   */
  private RequestView tokenizedView() {
    if (coreView == null) {
      coreView = model == null ? view : model.tokenized(view);
    }
    return coreView;
  }

  /** Whether a backend not tried yet (serving the request's model) may take the request now. */
  private boolean anotherCandidate() {
    for (Backend b : px.backends().routable(tried)) {
      if (model == null || model.serves(b)) {
        return true;
      }
    }
    return false;
  }

  private boolean canRetry() {
    return !responseStarted && retriesLeft > 0;
  }

  private void retry(String reason) {
    retriesLeft--;
    px.metrics().retry(reason);
    attempt();
  }

  private void armTimer(long deadlineNanos) {
    if (timer != null) {
      if (timerDeadlineNanos <= deadlineNanos) {
        return; // fires earlier and re-arms itself as needed
      }
      timer.cancel(false);
    }
    timerDeadlineNanos = deadlineNanos;
    timer = loop.schedule(this::onTimer, Math.max(0, deadlineNanos - px.ticker().nanos()), TimeUnit.NANOSECONDS);
  }

  private void cancelTimer() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  /** The router now waits for the client to take bytes; it gets {@code timeouts.client} to do so. */
  private void armClientTimer() {
    if (clientTimer == null && !done) {
      clientTimer = loop.schedule(this::onClientTimeout, px.config().timeouts().client().toNanos(), TimeUnit.NANOSECONDS);
    }
  }

  private void cancelClientTimer() {
    if (clientTimer != null) {
      clientTimer.cancel(false);
      clientTimer = null;
    }
  }

  private void onClientTimeout() {
    clientTimer = null;
    if (done) {
      return;
    }
    LOG.log(Level.INFO, () -> requestId + ": client read nothing for " + px.config().timeouts().client().toMillis()
        + " ms; closing its connection");
    closeUpstream();
    finish(Outcome.CANCELLED, false);
  }

  private void onTimer() {
    timer = null;
    if (done || upstream == null) {
      return;
    }
    long now = px.ticker().nanos();
    if (!firstByteSeen) {
      if (now >= firstByteDeadlineNanos) {
        failBeforeOrDuringResponse("first_byte_timeout", "backend " + backend.id() + " sent no response within "
            + px.config().timeouts().firstByte().toMillis() + " ms", HttpResponseStatus.GATEWAY_TIMEOUT);
      } else {
        armTimer(firstByteDeadlineNanos);
      }
      return;
    }
    if (upstreamReadPending) {
      long deadline = readRequestedNanos + px.config().timeouts().idle().toNanos();
      if (now >= deadline) {
        backend.breaker().onFailure();
        px.metrics().upstreamError(backend.id().name(), "idle_timeout");
        abortClient("backend " + backend.id() + " sent nothing for " + px.config().timeouts().idle().toMillis() + " ms",
            HttpResponseStatus.GATEWAY_TIMEOUT);
      } else {
        armTimer(deadline);
      }
    }
  }

  /** The client connection closed (or a write to it failed): abort the upstream request at once. */
  void onClientClosed() {
    if (done) {
      return;
    }
    closeUpstream();
    finish(Outcome.CANCELLED, false);
  }

  /**
   * The router is closing with this request still in progress (the drain timeout passed, or
   * {@code close()} without a drain): a response not started yet is answered 503 (the client may
   * send it again to another router replica); a started SSE stream ends with an error event as in
   * {@link #abortClient}; any other started body is cut. The connection closes after it.
   */
  void onShutdown() {
    if (done) {
      return;
    }
    if (!responseStarted) {
      closeUpstream();
      cancelTimer();
      respondError(HttpResponseStatus.SERVICE_UNAVAILABLE, ClientConnections.SHUTDOWN_MESSAGE, Outcome.UNAVAILABLE);
      return;
    }
    abortClient(ClientConnections.SHUTDOWN_MESSAGE, HttpResponseStatus.SERVICE_UNAVAILABLE);
  }

  /**
   * The response broke off after it started. An SSE body ends the way vLLM reports an error in the
   * middle of a stream ({@code create_streaming_error_response}): an event {@code data: {"error":
   * {...}}} (on an event boundary: {@link SseEvents} relayed whole events only), then {@code data:
   * [DONE]}, then the end of the body, so the client sees a clear error; with chunked framing the
   * connection stays usable, an HTTP/1.0 client's close-delimited body ends with the close. Any
   * other body (compressed, Content-Length, or cut inside an event too long to hold) cannot carry an
   * error: the client sees its connection close mid-body, and an SSE client drops the cut event.
   */
  private void abortClient(String reason, HttpResponseStatus errorStatus) {
    closeUpstream();
    if (sse && responseStarted && client.channel().isActive() && (sseEvents == null || sseEvents.atEventEnd())) {
      LOG.log(Level.INFO, () -> requestId + ": " + reason + "; ending the stream with an error event");
      if (sseEvents != null) {
        sseEvents.release(); // the event in progress, never to be whole
      }
      ByteBuf event = client.alloc().buffer(256 + reason.length());
      event.writeCharSequence("data: ", StandardCharsets.UTF_8);
      ByteBuf json = HttpErrors.body(client.alloc(), errorStatus, reason, null);
      event.writeBytes(json);
      json.release();
      event.writeCharSequence("\n\ndata: [DONE]\n\n", StandardCharsets.UTF_8);
      px.metrics().streamErrorEvent();
      ChannelFuture end = client.writeAndFlush(new DefaultLastHttpContent(event));
      if (!end.isDone()) {
        armClientTimer();
      }
      end.addListener((ChannelFutureListener) f -> {
        if (f.isSuccess()) {
          finish(Outcome.FAILED, clientKeepAlive && !closeClientAfterResponse);
        } else {
          onClientClosed();
        }
      });
      return;
    }
    LOG.log(Level.INFO, () -> requestId + ": " + reason + "; closing the client connection");
    finish(Outcome.FAILED, false);
  }

  private void respondError(HttpResponseStatus s, String message, Outcome outcome) {
    respondError(s, message, outcome, -1);
  }

  /** As above; {@code retryAfterSeconds >= 0} adds {@code Retry-After}. */
  private void respondError(HttpResponseStatus s, String message, Outcome outcome, long retryAfterSeconds) {
    responseStarted = true;
    boolean keepAlive = clientKeepAlive && !px.clients().draining();
    FullHttpResponse r = HttpErrors.response(client.alloc(), s, message, null, keepAlive);
    Headers.connection(r.headers(), request.protocolVersion(), keepAlive);
    r.headers().set(Headers.X_REQUEST_ID, requestId);
    if (retryAfterSeconds >= 0) {
      r.headers().set(HttpHeaderNames.RETRY_AFTER, Long.toString(retryAfterSeconds));
    }
    status = s.code();
    client.writeAndFlush(r).addListener((ChannelFutureListener) f -> finish(outcome, f.isSuccess() && keepAlive));
  }

  private void closeUpstream() {
    UpstreamConnection conn = upstream;
    upstream = null;
    if (conn != null) {
      conn.handler().listener(null);
      px.pool().release(conn, false);
    }
  }

  /**
   * Ends the attempt's lease: served if the backend answered 2xx and sent a first body byte (its
   * prefill ran, so it caches the prompt); otherwise unserved, and the prefix index takes back the
   * pages only this request added (a rejected or failed request leaves the engine's cache as it was).
   */
  private void releaseLease() {
    releaseLease(-1);
  }

  /**
   * As {@link #releaseLease()}, with the engine's reported cached prompt tokens of a served request
   * ({@code -1}: none), which correct the backend's approximate view when they contradict it
   * ({@link dev.kvroute.core.index.UsageCorrection}, counted as {@code kvroute_index_usage_corrections})
   * unless {@code index.correctFromUsage} is off.
   */
  private void releaseLease(long engineCachedTokens) {
    if (routed != null) {
      if (firstByteSeen && status >= 200 && status < 300) {
        if (engineCachedTokens >= 0 && px.config().index().correctFromUsage()) {
          int cached = (int) Math.min(engineCachedTokens, Integer.MAX_VALUE);
          if (dev.kvroute.core.index.UsageCorrection.keepPages(routed.promptLength(),
              routed.predictedCachedTokens(), cached, px.core().index().pageSizeTokens()) >= 0) {
            px.metrics().usageCorrection(backend.id().name());
          }
          routed.lease().releaseReported(cached);
        } else {
          routed.lease().release();
        }
      } else {
        routed.lease().releaseUnserved();
      }
    }
  }

  private static Outcome outcomeOf(int status) {
    if (status >= 500) {
      return Outcome.SERVER_ERROR;
    }
    if (status >= 400) {
      return Outcome.CLIENT_ERROR;
    }
    return Outcome.SUCCESS;
  }

  /**
   * Ends the exchange, exactly once: releases the lease and the request body, aborts a running
   * upstream request, records usage, metrics and the timeline, and returns the client connection to
   * its handler ({@code keepAlive}: serve the next request; otherwise close).
   */
  private void finish(Outcome outcome, boolean keepAlive) {
    if (done) {
      return;
    }
    done = true;
    cancelTimer();
    cancelClientTimer();
    closeUpstream();
    if (sseEvents != null) {
      sseEvents.release();
    }
    boolean reported = false;
    if (usage != null && outcome == Outcome.SUCCESS) {
      usage.end();
      reported = usage.plausible();
    }
    releaseLease(reported ? usage.cachedTokens() : -1);
    if (ticket != null) {
      px.admission().cancel(ticket); // the client went away while queued: leave the queue at once
      ticket = null;
    }
    settleAdmission();
    px.admission().released();
    long now = px.ticker().nanos();
    Lifecycle end = outcome == Outcome.CANCELLED ? Lifecycle.CANCELLED
        : outcome == Outcome.FAILED || outcome == Outcome.UNAVAILABLE || outcome == Outcome.RATE_LIMITED ? Lifecycle.FAILED
        : Lifecycle.COMPLETED;
    timeline.mark(end, now, outcome.tag());
    String backendTag = backend == null ? "none" : backend.id().name();
    if (usage != null && outcome == Outcome.SUCCESS) {
      if (reported) {
        px.metrics().reported(backendTag, usage.promptTokens(), usage.cachedTokens(), ProxyMetrics.prediction(routed),
            px.core().index().pageSizeTokens());
      } else if (usage.found()) {
        px.metrics().usageImplausible();
      } else {
        px.metrics().usageMissing();
      }
    }
    px.metrics().request(backendTag, endpointTag, outcome, timeline.sinceStart(now));
    if (model != null) {
      px.metrics().modelRequest(model.label(), outcome, reported ? usage.promptTokens() : 0,
          reported ? usage.cachedTokens() : -1);
    }
    request.release();
    LOG.log(Level.DEBUG, () -> requestId + " " + request.method() + " " + request.uri() + " " + timeline);
    owner.exchangeDone(keepAlive);
  }

  /** The request's lifecycle so far (for tests and logs). */
  Timeline timeline() {
    return timeline;
  }
}
