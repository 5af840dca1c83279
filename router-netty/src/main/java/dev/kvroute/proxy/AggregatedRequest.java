package dev.kvroute.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpVersion;

/**
 * A request {@link RequestAggregator} gathered into one heap buffer, its {@link #content()}, which
 * parsing reads in place, that also keeps the buffers its body arrived in: the decoder's slices of
 * the socket's direct read buffers, the same bytes in the same order ({@link #forwardedBody}). The
 * upstream request is written from those, so the socket transport copies nothing: a heap buffer
 * written to a native socket (epoll, io_uring) is first copied into direct memory, one more copy of a
 * 22 KB chat turn per request.
 *
 * <p>Lifetime: the arrival buffers are released with the content's last release through this object
 * ({@link #release()}), so whoever keeps the body past the request retains and releases the request,
 * not its content. A {@link #copy}, {@link #duplicate} or {@link #replace} is a plain request without
 * them.
 *
 * <p>Thread safety: as a Netty message, handed from thread to thread, not shared.
 */
final class AggregatedRequest extends DefaultFullHttpRequest {
  private final CompositeByteBuf arrived;

  /**
   * @param content the whole body, in a heap buffer (owned from now on)
   * @param arrived the same bytes as the buffers they arrived in (direct; owned from now on)
   */
  AggregatedRequest(HttpVersion version, HttpMethod method, String uri, ByteBuf content, CompositeByteBuf arrived,
      HttpHeaders headers, HttpHeaders trailers) {
    super(version, method, uri, content, headers, trailers);
    if (arrived.readableBytes() != content.readableBytes()) {
      throw new IllegalArgumentException("arrived: " + arrived.readableBytes() + " bytes (expected: the content's "
          + content.readableBytes() + ")");
    }
    this.arrived = arrived;
  }

  /**
   * The body to write upstream, retained for the caller (one upstream request each): the arrival
   * buffers of an {@link AggregatedRequest}, else {@code request}'s content.
   */
  static ByteBuf forwardedBody(FullHttpRequest request) {
    return request instanceof AggregatedRequest a ? a.arrived.retainedDuplicate() : request.content().retainedDuplicate();
  }

  @Override
  public boolean release() {
    return released(super.release());
  }

  @Override
  public boolean release(int decrement) {
    return released(super.release(decrement));
  }

  private boolean released(boolean last) {
    if (last) {
      arrived.release();
    }
    return last;
  }
}
