package dev.kvroute.proxy;

import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValidationUtil;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpHeadersFactory;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.util.List;

/**
 * The proxy's header rewriting as pure functions, headers in and headers out (the shape of Armeria's
 * {@code ProxyService}): what the backend is sent for a client request, and what the client is sent
 * for a backend's response head. {@link ProxyExchange} builds its messages from these and owns
 * everything else (bodies, timing, connections).
 *
 * <p>Rules (RFC 9110 §7.6): hop-by-hop headers and {@code Content-Length} are never copied
 * ({@link Headers#copyEndToEnd}); the framing of each side is the proxy's own.
 *
 * <p>The headers built here do not validate what is put in them again: every header copied was
 * validated (name a token, value without CR, LF or NUL) by the Netty decoder that read it (the
 * client side's {@code HttpServerCodec}, the backend side's {@code HttpClientCodec}, both with
 * Netty's default validation), and the router's own values are a URI's authority, an address, a
 * validated or generated request id, numbers, and a backend name checked here. Validating each
 * header again cost about 2% of the proxy's CPU per request (docs/performance.md, "Two costs per
 * response").
 *
 * <p>Stateless and thread-safe.
 */
final class HeaderRewrite {
  /** Headers whose values were validated where they came from, or are the router's own. */
  private static final HttpHeadersFactory PREVALIDATED = DefaultHttpHeadersFactory.headersFactory().withValidation(false);

  private HeaderRewrite() {}

  /**
   * Headers of the request sent to the backend: the client's end-to-end headers without
   * {@code Host}, {@code Expect} (the router answered any {@code 100-continue} itself) and
   * {@code X-Request-Id}; then {@code Host} set to the backend's authority, {@code X-Request-Id} to
   * the router's id for the request, {@code X-Forwarded-For} (every line the client sent, joined)
   * appended with the client's address (when known), and {@code Content-Length} when there is a body or the method is one that carries one.
   *
   * @param client the client request's headers (not modified)
   * @param method the request method
   * @param bodyLength the body's length in bytes (the aggregated request's)
   * @param authority the backend's {@code host[:port]}
   * @param requestId the request id to send
   * @param clientIp the client's address, or {@code null} when the channel has no IP address
   * @return new headers
   */
  static HttpHeaders upstreamRequest(HttpHeaders client, HttpMethod method, int bodyLength, String authority,
      String requestId, String clientIp) {
    HttpHeaders h = PREVALIDATED.newHeaders();
    Headers.copyEndToEnd(client, h, HttpHeaderNames.HOST, HttpHeaderNames.EXPECT, Headers.X_REQUEST_ID);
    h.set(HttpHeaderNames.HOST, authority);
    h.set(Headers.X_REQUEST_ID, requestId);
    if (clientIp != null) {
      // every line the client sent, in order (a balancer in front may have added its own), as nginx's
      // $proxy_add_x_forwarded_for joins them
      List<String> prior = client.getAll(Headers.X_FORWARDED_FOR);
      h.set(Headers.X_FORWARDED_FOR, prior.isEmpty() ? clientIp : String.join(", ", prior) + ", " + clientIp);
    }
    if (bodyLength > 0 || method.equals(HttpMethod.POST) || method.equals(HttpMethod.PUT)
        || method.equals(HttpMethod.PATCH)) {
      h.setInt(HttpHeaderNames.CONTENT_LENGTH, bodyLength);
    }
    return h;
  }

  /**
   * The response head for the client, and whether the client connection must close after the body.
   *
   * @param headers the headers to send
   * @param closeAfter the body's end is the connection's close (an HTTP/1.0 client and a body of
   *     unknown length: HTTP/1.0 has no chunked framing)
   */
  record ClientHead(HttpHeaders headers, boolean closeAfter) {}

  /**
   * Headers of the response head sent to the client: the backend's end-to-end headers, then
   * {@code X-Kvroute-Backend}, {@code X-Request-Id} when the backend sent none, and the framing: the
   * backend's {@code Content-Length} when it gave one (and did not chunk); otherwise chunked for an
   * HTTP/1.1 client, or close-delimited for an HTTP/1.0 one; nothing for a response without a body
   * (204, 304, or a {@code HEAD} request). {@code Connection: close} when the connection will not be
   * kept ({@code keepAlive} false, or close-delimited), {@code Connection: keep-alive} for a kept
   * HTTP/1.0 client.
   *
   * @param upstream the backend's response head (not modified)
   * @param backendName the backend's id, for {@code X-Kvroute-Backend}
   * @throws IllegalArgumentException if {@code backendName} is no valid header value (holds a CR, LF or NUL)
   * @param requestId the router's id for the request
   * @param method the client request's method
   * @param clientVersion the client request's protocol version
   * @param keepAlive whether the client connection may stay open after this response (the client
   *     asked for it and the router is not draining)
   */
  static ClientHead clientResponse(HttpResponse upstream, String backendName, String requestId, HttpMethod method,
      HttpVersion clientVersion, boolean keepAlive) {
    if (HttpHeaderValidationUtil.validateValidHeaderValue(backendName) != -1) {
      throw new IllegalArgumentException("backend name: " + backendName + " (expected: a valid header value)");
    }
    HttpHeaders h = PREVALIDATED.newHeaders();
    Headers.copyEndToEnd(upstream.headers(), h);
    h.set(Headers.KVROUTE_BACKEND, backendName);
    if (!h.contains(Headers.X_REQUEST_ID)) {
      h.set(Headers.X_REQUEST_ID, requestId);
    }
    int code = upstream.status().code();
    boolean bodyless = code == 204 || code == 304 || method.equals(HttpMethod.HEAD);
    boolean upstreamChunked = HttpUtil.isTransferEncodingChunked(upstream);
    long length = upstreamChunked ? -1 : HttpUtil.getContentLength(upstream, -1L);
    boolean closeAfter = false;
    if (length >= 0) {
      h.set(HttpHeaderNames.CONTENT_LENGTH, length);
    } else if (!bodyless) {
      if (clientVersion.equals(HttpVersion.HTTP_1_0)) {
        closeAfter = true; // HTTP/1.0 has no chunked framing: the close ends the body
      } else {
        h.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
      }
    }
    if (!keepAlive || closeAfter) {
      h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    } else if (clientVersion.equals(HttpVersion.HTTP_1_0)) {
      h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
    }
    return new ClientHead(h, closeAfter);
  }
}
