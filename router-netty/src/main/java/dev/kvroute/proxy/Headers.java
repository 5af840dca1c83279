package dev.kvroute.proxy;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.AsciiString;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Header rules of a proxy (RFC 9110 §7.6.1): hop-by-hop headers describe one connection and are
 * never forwarded; framing headers are recomputed by the proxy for its own connection.
 *
 * <p>Stateless and thread-safe.
 */
final class Headers {
  /** The response header naming the backend a request was routed to. */
  static final AsciiString KVROUTE_BACKEND = AsciiString.cached("x-kvroute-backend");

  /** The request id header, added to the upstream request and the response when absent. */
  static final AsciiString X_REQUEST_ID = AsciiString.cached("x-request-id");

  static final AsciiString X_FORWARDED_FOR = AsciiString.cached("x-forwarded-for");

  private static final List<AsciiString> HOP_BY_HOP = List.of(
      HttpHeaderNames.CONNECTION,
      AsciiString.cached("keep-alive"),
      AsciiString.cached("proxy-connection"),
      HttpHeaderNames.PROXY_AUTHENTICATE,
      HttpHeaderNames.PROXY_AUTHORIZATION,
      HttpHeaderNames.TE,
      HttpHeaderNames.TRAILER,
      HttpHeaderNames.TRANSFER_ENCODING,
      HttpHeaderNames.UPGRADE);

  private static final int MAX_HOP_BY_HOP_LENGTH =
      HOP_BY_HOP.stream().mapToInt(AsciiString::length).max().orElseThrow();
  /** Which name lengths some hop-by-hop header has: the test most names fail. */
  private static final boolean[] HOP_BY_HOP_LENGTHS = new boolean[MAX_HOP_BY_HOP_LENGTH + 1];

  static {
    for (AsciiString h : HOP_BY_HOP) {
      HOP_BY_HOP_LENGTHS[h.length()] = true;
    }
  }

  private Headers() {}

  /**
   * Copies {@code from} into {@code to} without hop-by-hop headers (including any named by
   * {@code Connection}), {@code Content-Length} (the proxy sets its own framing) and the names in
   * {@code alsoDrop}.
   */
  static void copyEndToEnd(HttpHeaders from, HttpHeaders to, AsciiString... alsoDrop) {
    List<String> connectionTokens = new ArrayList<>(2);
    for (String v : from.getAll(HttpHeaderNames.CONNECTION)) {
      for (String t : v.split(",")) {
        String token = t.trim().toLowerCase(Locale.ROOT);
        if (!token.isEmpty()) {
          connectionTokens.add(token);
        }
      }
    }
    for (Map.Entry<CharSequence, CharSequence> h : iterable(from)) {
      CharSequence name = h.getKey();
      if (isHopByHop(name) || AsciiString.contentEqualsIgnoreCase(name, HttpHeaderNames.CONTENT_LENGTH)) {
        continue;
      }
      boolean drop = false;
      for (AsciiString d : alsoDrop) {
        if (AsciiString.contentEqualsIgnoreCase(name, d)) {
          drop = true;
          break;
        }
      }
      for (String t : connectionTokens) {
        if (AsciiString.contentEqualsIgnoreCase(name, t)) {
          drop = true;
          break;
        }
      }
      if (!drop) {
        to.add(name, h.getValue());
      }
    }
  }

  /**
   * Sets {@code Connection} on a response the router writes to a client: {@code close} unless
   * {@code keepAlive}; {@code keep-alive} when the connection stays open for an HTTP/1.0 client
   * (which asked for it: HTTP/1.0 closes by default, RFC 9112 §9.3 and Appendix C.2.2).
   */
  static void connection(HttpHeaders response, HttpVersion requestVersion, boolean keepAlive) {
    if (!keepAlive) {
      response.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    } else if (requestVersion.equals(HttpVersion.HTTP_1_0)) {
      response.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
    }
  }

  /** Whether {@code name} is a hop-by-hop header. */
  static boolean isHopByHop(CharSequence name) {
    int n = name.length();
    if (n > MAX_HOP_BY_HOP_LENGTH || !HOP_BY_HOP_LENGTHS[n]) {
      return false; // most headers: no hop-by-hop name is that long
    }
    for (AsciiString h : HOP_BY_HOP) {
      if (AsciiString.contentEqualsIgnoreCase(name, h)) {
        return true;
      }
    }
    return false;
  }

  private static Iterable<Map.Entry<CharSequence, CharSequence>> iterable(HttpHeaders headers) {
    return headers::iteratorCharSequence;
  }
}
