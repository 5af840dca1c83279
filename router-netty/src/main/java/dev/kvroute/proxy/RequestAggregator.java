package dev.kvroute.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;

/**
 * Aggregates a request's body into one {@link FullHttpRequest}, enforcing the body limit on the bytes
 * actually read, so a chunked body without {@code Content-Length} is limited too.
 *
 * <p>A request that cannot be accepted is passed on as a {@link RejectedRequest} (so that the next
 * handler answers it in order, after any response still in progress), for one of:
 *
 * <ul>
 *   <li>{@code Content-Length} or bytes read above {@code maxBodyBytes} → 413;
 *   <li>a header block above the decoder's limit → 431; a request line above it → 414; any other
 *       decoding failure → 400;
 *   <li>a missing, repeated or invalid {@code Host}, an unsupported {@code Transfer-Encoding}, or an
 *       ambiguous request-target → 400 or 501 ({@link RequestHeadChecks}); an accepted target is
 *       replaced by its normalized form ({@link RequestTarget});
 *   <li>whatever the {@link HeadCheck} given at construction refuses (the admin port's token: 401),
 *       before any of the body is read;
 *   <li>an {@code Expect} other than {@code 100-continue} → 417.
 * </ul>
 *
 * After a rejection this handler reads and discards the rest of the client's bytes until the
 * connection closes; whoever answers the rejection closes it (see {@link RejectedRequest}).
 *
 * <p>{@code Expect: 100-continue} is answered here ({@code 100 Continue}, or 413 when the announced
 * length is too large) and the header is removed, so it is never forwarded.
 *
 * <p>Pipeline position: right after {@code HttpServerCodec}, before {@code FlowControlHandler}. With
 * auto-read off it asks for the next read itself while a body is incomplete.
 *
 * <p>Not thread-safe: one instance per channel, used on its event loop.
 */
final class RequestAggregator extends ChannelInboundHandlerAdapter {
  /** A further check on a request head, run after {@link RequestHeadChecks} and before the body is read. */
  @FunctionalInterface
  interface HeadCheck {
    /** {@code null} to accept {@code head}, else the refusal to answer. */
    RejectedRequest check(HttpRequest head);
  }

  /**
   * Bodies of a declared length up to this many bytes are gathered into one heap buffer of that
   * length, so that parsing reads them where they are (a heap buffer has an array): no copy of the
   * body and no garbage per request; the buffers they arrived in are kept beside it for forwarding
   * ({@link AggregatedRequest}), so the one copy is that heap buffer. Longer or chunked bodies are
   * gathered as a composite of the buffers they arrived in, and copied once to be parsed.
   */
  static final int CONTIGUOUS_BODY_BYTES = 1 << 20;
  /**
   * Most arrival buffers a contiguous body keeps for forwarding ({@link AggregatedRequest}): a body
   * that came in more pieces is forwarded from its heap copy (each piece holds a whole read buffer,
   * so a body trickled in small reads would otherwise hold many times its size).
   */
  static final int MAX_ARRIVAL_BUFFERS = 16;

  private final long maxBodyBytes;
  private final HeadCheck headCheck;
  private HttpRequest head;
  private ByteBuf body;
  /** A contiguous body's arrival buffers while they may still be forwarded, else null. */
  private CompositeByteBuf arrived;
  private boolean draining;

  RequestAggregator(long maxBodyBytes) {
    this(maxBodyBytes, h -> null);
  }

  RequestAggregator(long maxBodyBytes, HeadCheck headCheck) {
    this.maxBodyBytes = maxBodyBytes;
    this.headCheck = headCheck;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (draining) {
      // after a rejection nothing more is served on this connection; its answerer closes it
      ReferenceCountUtil.release(msg);
      return;
    }
    if (msg instanceof HttpRequest) {
      onHead(ctx, (HttpRequest) msg);
    } else if (msg instanceof HttpContent) {
      onContent(ctx, (HttpContent) msg);
    } else {
      ctx.fireChannelRead(msg);
    }
  }

  private void onHead(ChannelHandlerContext ctx, HttpRequest req) {
    releaseBody();
    DecoderResult result = req.decoderResult();
    if (result.isFailure()) {
      ReferenceCountUtil.release(req);
      Throwable cause = result.cause();
      if (cause instanceof TooLongHttpHeaderException) {
        reject(ctx, HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request header block too large");
      } else if (cause instanceof TooLongHttpLineException) {
        reject(ctx, HttpResponseStatus.REQUEST_URI_TOO_LONG, "request line too long");
      } else {
        reject(ctx, HttpResponseStatus.BAD_REQUEST, "malformed HTTP request: " + cause.getMessage());
      }
      return;
    }
    RejectedRequest refused = RequestHeadChecks.check(req);
    if (refused == null) {
      refused = headCheck.check(req);
    }
    if (refused != null) {
      ReferenceCountUtil.release(req);
      draining = true;
      ctx.fireChannelRead(refused);
      return;
    }
    String expect = req.headers().get(HttpHeaderNames.EXPECT);
    if (expect != null && !"100-continue".equalsIgnoreCase(expect.trim())) {
      ReferenceCountUtil.release(req);
      reject(ctx, HttpResponseStatus.EXPECTATION_FAILED,
          "unsupported Expect: " + expect + " (expected: 100-continue)");
      return;
    }
    long declared = HttpUtil.getContentLength(req, -1L);
    if (declared > maxBodyBytes) {
      ReferenceCountUtil.release(req);
      reject(ctx, HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, tooLarge());
      return;
    }
    if (expect != null) {
      req.headers().remove(HttpHeaderNames.EXPECT);
      // RFC 9110 10.1.1: an HTTP/1.0 request's 100-continue is ignored (its client would take a 1xx for
      // the final response); its body comes anyway
      if (!req.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
        ctx.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE, Unpooled.EMPTY_BUFFER))
            .addListener(ChannelFutureListener.FIRE_EXCEPTION_ON_FAILURE);
      }
    }
    head = req;
    boolean contiguous = declared >= 0 && declared <= CONTIGUOUS_BODY_BYTES && !HttpUtil.isTransferEncodingChunked(req);
    body = contiguous ? ctx.alloc().heapBuffer((int) declared) : ctx.alloc().compositeBuffer(1024);
    arrived = contiguous && declared > 0 ? ctx.alloc().compositeDirectBuffer(MAX_ARRIVAL_BUFFERS) : null;
    if (req instanceof HttpContent) {
      onContent(ctx, (HttpContent) req);
    }
  }

  private void onContent(ChannelHandlerContext ctx, HttpContent chunk) {
    if (head == null) {
      ReferenceCountUtil.release(chunk);
      return;
    }
    if (chunk.decoderResult().isFailure()) {
      ReferenceCountUtil.release(chunk);
      releaseBody();
      reject(ctx, HttpResponseStatus.BAD_REQUEST, "malformed HTTP request body: " + chunk.decoderResult().cause().getMessage());
      return;
    }
    int n = chunk.content().readableBytes();
    if ((long) body.readableBytes() + n > maxBodyBytes) {
      ReferenceCountUtil.release(chunk);
      releaseBody();
      reject(ctx, HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, tooLarge());
      return;
    }
    boolean last = chunk instanceof LastHttpContent;
    if (n > 0) {
      ByteBuf content = chunk.content();
      if (body instanceof CompositeByteBuf composite) {
        composite.addComponent(true, content.retain());
      } else {
        body.writeBytes(content, content.readerIndex(), n);
        keepArrived(content);
      }
    }
    if (!(chunk instanceof HttpRequest)) {
      chunk.release();
    }
    if (last) {
      HttpRequest h = head;
      HttpHeaders trailers = ((LastHttpContent) chunk).trailingHeaders();
      FullHttpRequest full = arrived != null
          ? new AggregatedRequest(h.protocolVersion(), h.method(), h.uri(), body, arrived, h.headers(), trailers)
          : new DefaultFullHttpRequest(h.protocolVersion(), h.method(), h.uri(), body, h.headers(), trailers);
      arrived = null;
      full.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
      HttpUtil.setContentLength(full, body.readableBytes());
      if (h instanceof HttpContent) {
        // a decoder-built full request: its own content was copied into body above
        ReferenceCountUtil.release(h);
      }
      head = null;
      body = null;
      ctx.fireChannelRead(full);
    }
  }

  /**
   * Keeps {@code content} (already copied into the heap body) among the arrival buffers, or gives
   * them up: for a heap piece (nothing to save), or one piece too many.
   */
  private void keepArrived(ByteBuf content) {
    if (arrived == null) {
      return;
    }
    if (content.isDirect() && arrived.numComponents() < MAX_ARRIVAL_BUFFERS) {
      arrived.addComponent(true, content.retainedSlice());
    } else {
      arrived.release();
      arrived = null;
    }
  }

  /** Whether a request's head has arrived and its body is still incomplete. */
  boolean inProgress() {
    return head != null;
  }

  /** Drops the request in progress and discards everything read from now on (the connection is closing). */
  void abandon() {
    releaseBody();
    draining = true;
  }

  @Override
  public void channelReadComplete(ChannelHandlerContext ctx) {
    if ((head != null || draining) && !ctx.channel().config().isAutoRead()) {
      ctx.read();
    }
    ctx.fireChannelReadComplete();
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    releaseBody();
    ctx.fireChannelInactive();
  }

  @Override
  public void handlerRemoved(ChannelHandlerContext ctx) {
    releaseBody();
  }

  private void reject(ChannelHandlerContext ctx, HttpResponseStatus status, String message) {
    draining = true;
    ctx.fireChannelRead(new RejectedRequest(status, message));
  }

  private String tooLarge() {
    return "request body exceeds the limit of " + maxBodyBytes + " bytes";
  }

  private void releaseBody() {
    if (body != null) {
      body.release();
      body = null;
    }
    if (arrived != null) {
      arrived.release();
      arrived = null;
    }
    if (head != null) {
      ReferenceCountUtil.release(head);
      head = null;
    }
  }
}
