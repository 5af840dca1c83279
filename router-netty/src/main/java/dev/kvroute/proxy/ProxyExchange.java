package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.RouterCore;
import dev.kvroute.core.request.RequestView;
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
 * <p>One unit of about 700 lines because it is one state machine: attempts, both timers, the relay
 * and the exactly-once finish read and write the same per-request state on one event loop. Its pure
 * parts live beside it: {@link HeaderRewrite} (headers), {@link UsageScanner} (usage), {@link
 * Timeline} (timing).
 *
 * <p>Not thread-safe: everything runs on the client channel's event loop, which is also the upstream
 * channel's.
 */
final class ProxyExchange implements UpstreamHandler.Listener {
  private static final System.Logger LOG = System.getLogger(ProxyExchange.class.getName());

  private final ProxyContext px;
  private final ProxyHandler owner;
  private final ChannelHandlerContext client;
  private final EventLoop loop;
  private final FullHttpRequest request;
  private final String endpointTag;
  private final RequestView view;
  private final int[] promptTokens;
  private final String requestId;
  private final boolean clientKeepAlive;
  private final Timeline timeline;
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
  private boolean responseStarted;
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

  /**
   * @param request the aggregated request; this exchange owns it and releases it when done
   * @param view the routing view for generation requests, or {@code null} for pass-through
   * @param promptTokens the view's prompt tokens when already computed (large bodies), else {@code null}
   * @param requestId the request id (the client's {@code X-Request-Id} or a generated one)
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
      Timeline timeline) {
    this.px = px;
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

  /** Starts the first attempt. */
  void start() {
    attempt();
  }

  private void attempt() {
    backend = null;
    routed = null;
    staleRetryUsed = false;
    skippingInformational = false;
    List<Backend> candidates = px.backends().routable(tried);
    if (candidates.isEmpty()) {
      if (tried.isEmpty()) {
        respondError(HttpResponseStatus.SERVICE_UNAVAILABLE, "no healthy backend", Outcome.UNAVAILABLE);
      } else {
        respondError(failureStatus, failureMessage, Outcome.FAILED);
      }
      return;
    }
    if (view != null) {
      List<BackendId> ids = new ArrayList<>(candidates.size());
      for (Backend b : candidates) {
        ids.add(b.id());
      }
      long t0 = px.ticker().nanos();
      if (promptTokens != null) {
        // a large prompt: its index work leaves the event loop, as its tokenizing did
        if (!OffLoopRouting.route(px, loop, promptTokens, view.sessionKey(), ids,
            (r, failure) -> onRouted(ids, t0, r, failure))) {
          respondError(HttpResponseStatus.SERVICE_UNAVAILABLE,
              "too many large requests waiting to be routed; retry later", Outcome.UNAVAILABLE);
        }
        return;
      }
      RouterCore.Routed r;
      try {
        r = px.core().route(view, ids);
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
    if (done) {
      // the client went away (or the request timed out) while a large prompt was being routed
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
    px.metrics().predicted(chosen.id().name(), r.promptTokens().length, r.predictedCachedTokens());
    routedTo();
  }

  private void routedTo() {
    tried.add(backend.id());
    timeline.mark(Lifecycle.ROUTED, px.ticker().nanos(), backend.id().name());
    connect(false);
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
          "cannot connect to backend " + backend.id() + ": " + cause.getMessage(),
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
    HttpHeaders h = HeaderRewrite.upstreamRequest(request.headers(), request.method(),
        request.content().readableBytes(), backend.config().authority(), requestId, ip);
    return new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, request.method(),
        backend.config().basePath() + request.uri(), request.content().retainedDuplicate(), h,
        new DefaultHttpHeaders());
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
          + resp.decoderResult().cause(), HttpResponseStatus.BAD_GATEWAY);
      return false;
    }
    int code = resp.status().code();
    if (code < 200) {
      // 1xx informational (the router never sends Expect upstream): skip it and its empty content
      skippingInformational = true;
      return false;
    }
    if ((code == 502 || code == 503) && canRetry() && !px.backends().routable(tried).isEmpty()) {
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
    responseStarted = true;
    lastClientWrite = client.write(clientResponse(resp));
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
    boolean last = c instanceof LastHttpContent;
    if (skippingInformational || !responseStarted) {
      c.release();
      if (last) {
        skippingInformational = false;
      }
      return;
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
    }
    if (usage != null) {
      usage.feed(c.content());
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
      // nothing relayed yet (informational response, or headers still partial): keep reading
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
    String why = cause == null ? "" : ": " + cause;
    if (!responseStarted) {
      if (conn.reused() && !staleRetryUsed) {
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
    abortClient("backend " + backend.id() + " closed the connection mid-response" + why);
  }

  private void failBeforeOrDuringResponse(String kind, String message, HttpResponseStatus statusIfNotStarted) {
    if (!responseStarted) {
      upstreamFailed(kind, message, statusIfNotStarted);
    } else {
      backend.breaker().onFailure();
      px.metrics().upstreamError(backend.id().name(), kind);
      abortClient(message);
    }
  }

  /**
   * An attempt failed before any response byte reached the client: count it against the backend,
   * release what the attempt holds, and retry on another backend if allowed, else answer the error.
   */
  private void upstreamFailed(String kind, String message, HttpResponseStatus statusIfFinal) {
    backend.breaker().onFailure();
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
        abortClient("backend " + backend.id() + " sent nothing for " + px.config().timeouts().idle().toMillis() + " ms");
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

  /** The response broke off after it started: the client sees its connection close mid-body. */
  private void abortClient(String reason) {
    LOG.log(Level.INFO, () -> requestId + ": " + reason + "; closing the client connection");
    closeUpstream();
    finish(Outcome.FAILED, false);
  }

  private void respondError(HttpResponseStatus s, String message, Outcome outcome) {
    responseStarted = true;
    boolean keepAlive = clientKeepAlive && !px.clients().draining();
    FullHttpResponse r = HttpErrors.response(client.alloc(), s, message, null, keepAlive);
    Headers.connection(r.headers(), request.protocolVersion(), keepAlive);
    r.headers().set(Headers.X_REQUEST_ID, requestId);
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
    if (routed != null) {
      if (firstByteSeen && status >= 200 && status < 300) {
        routed.lease().release();
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
    releaseLease();
    long now = px.ticker().nanos();
    Lifecycle end = outcome == Outcome.CANCELLED ? Lifecycle.CANCELLED
        : outcome == Outcome.FAILED || outcome == Outcome.UNAVAILABLE ? Lifecycle.FAILED : Lifecycle.COMPLETED;
    timeline.mark(end, now, outcome.tag());
    String backendTag = backend == null ? "none" : backend.id().name();
    if (usage != null && outcome == Outcome.SUCCESS) {
      usage.end();
      if (usage.found()) {
        px.metrics().reported(backendTag, usage.promptTokens(), usage.cachedTokens(),
            routed == null ? 0 : routed.predictedCachedTokens());
      } else {
        px.metrics().usageMissing();
      }
    }
    px.metrics().request(backendTag, endpointTag, outcome, timeline.sinceStart(now));
    request.release();
    LOG.log(Level.DEBUG, () -> requestId + " " + request.method() + " " + request.uri() + " " + timeline);
    owner.exchangeDone(keepAlive);
  }

  /** The request's lifecycle so far (for tests and logs). */
  Timeline timeline() {
    return timeline;
  }
}
