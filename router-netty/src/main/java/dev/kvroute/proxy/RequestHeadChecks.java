package dev.kvroute.proxy;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.util.NetUtil;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Checks on a request head that make a request ambiguous or unanswerable, applied before any of its
 * body is read (by {@link RequestAggregator}, on the proxy and the admin port alike):
 *
 * <ul>
 *   <li>The HTTP version: a major version other than 1 ({@code HTTP/2.0}, {@code HTTP/3.0} sent as
 *       HTTP/1 text) → 505, as RFC 9110 §15.6.6 allows; any 1.x is served as HTTP/1.1 (RFC 9110 §6.2).
 *   <li>{@code Host} (RFC 9112 §3.2): absent on HTTP/1.1, given on more than one line, or not
 *       {@code uri-host [":" port]} (RFC 3986 §3.2.2: a reg-name, an IPv4 address or a bracketed IPv6
 *       literal; no userinfo, no spaces; port 0..65535; empty value) → 400.
 *   <li>{@code Transfer-Encoding} (RFC 9112 §6): the only accepted value is {@code chunked} alone. A
 *       coding kvroute does not implement before a final {@code chunked} ({@code gzip, chunked},
 *       {@code identity, chunked}) → 501, as §6.1 says; {@code chunked} applied twice (forbidden by
 *       §6.1) or a final coding other than {@code chunked} (the body length cannot be determined,
 *       §6.3) → 400; any {@code Transfer-Encoding} on HTTP/1.0 (faulty framing, §6.1) → 400. Several
 *       header lines count as one comma-separated list.
 *   <li>The request-target ({@link RequestTarget}): refused with 400, or replaced in {@code head} by
 *       its normalized origin-form.
 * </ul>
 *
 * Every refusal closes the connection (see {@link RejectedRequest}).
 *
 * <p>Stateless and thread-safe.
 */
final class RequestHeadChecks {
  private RequestHeadChecks() {}

  /**
   * Checks {@code head} and normalizes its target in place.
   *
   * @return {@code null} when the request may go on, else the refusal to answer
   */
  static RejectedRequest check(HttpRequest head) {
    if (head.protocolVersion().majorVersion() != 1) {
      return new RejectedRequest(HttpResponseStatus.HTTP_VERSION_NOT_SUPPORTED, "HTTP version "
          + head.protocolVersion().text() + " (expected: HTTP/1.1 or HTTP/1.0 on this port)");
    }
    RejectedRequest r = checkHost(head);
    if (r == null) {
      r = checkTransferEncoding(head);
    }
    if (r == null) {
      try {
        head.setUri(RequestTarget.parse(head.uri()).originForm());
      } catch (RequestTarget.InvalidTargetException e) {
        r = new RejectedRequest(HttpResponseStatus.BAD_REQUEST, e.getMessage());
      }
    }
    return r;
  }

  static RejectedRequest checkHost(HttpRequest head) {
    List<String> hosts = head.headers().getAll(HttpHeaderNames.HOST);
    if (hosts.isEmpty()) {
      return head.protocolVersion().equals(HttpVersion.HTTP_1_0) ? null
          : bad("no Host header (required on HTTP/1.1, RFC 9112 section 3.2)");
    }
    if (hosts.size() > 1) {
      return bad("Host header given " + hosts.size() + " times (expected: once, RFC 9112 section 3.2)");
    }
    String host = hosts.get(0).trim();
    if (!validHost(host)) {
      return bad("Host: " + printable(host) + " (expected: host[:port], RFC 9112 section 3.2)");
    }
    return null;
  }

  /** {@code uri-host [":" port]}, RFC 3986 §3.2.2-3.2.3, with a non-empty host and a port up to 65535. */
  static boolean validHost(String value) {
    String host;
    String port;
    if (value.startsWith("[")) {
      int close = value.indexOf(']');
      if (close < 0) {
        return false;
      }
      String literal = value.substring(1, close);
      if (!NetUtil.isValidIpV6Address(literal) && !ipvFuture(literal)) {
        return false;
      }
      String rest = value.substring(close + 1);
      if (rest.isEmpty()) {
        return true;
      }
      if (rest.charAt(0) != ':') {
        return false;
      }
      host = "[ok]";
      port = rest.substring(1);
    } else {
      int colon = value.indexOf(':');
      host = colon < 0 ? value : value.substring(0, colon);
      port = colon < 0 ? null : value.substring(colon + 1);
      if (host.isEmpty() || !regName(host)) {
        return false;
      }
    }
    if (port == null || port.isEmpty()) {
      return port == null || !host.isEmpty();
    }
    if (port.length() > 5) {
      return false;
    }
    for (int i = 0; i < port.length(); i++) {
      if (port.charAt(i) < '0' || port.charAt(i) > '9') {
        return false;
      }
    }
    return Integer.parseInt(port) <= 65535;
  }

  /** reg-name = *( unreserved / pct-encoded / sub-delims ); an IPv4 address is a reg-name too. */
  private static boolean regName(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%') {
        if (i + 2 >= s.length() || Character.digit(s.charAt(i + 1), 16) < 0 || Character.digit(s.charAt(i + 2), 16) < 0) {
          return false;
        }
        i += 2;
      } else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || "-._~!$&'()*+,;=".indexOf(c) >= 0)) {
        return false;
      }
    }
    return true;
  }

  /** IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ). */
  private static boolean ipvFuture(String s) {
    if (s.length() < 4 || (s.charAt(0) != 'v' && s.charAt(0) != 'V')) {
      return false;
    }
    int dot = s.indexOf('.');
    if (dot < 2 || dot == s.length() - 1) {
      return false;
    }
    for (int i = 1; i < dot; i++) {
      if (Character.digit(s.charAt(i), 16) < 0) {
        return false;
      }
    }
    for (int i = dot + 1; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || "-._~!$&'()*+,;=:".indexOf(c) >= 0)) {
        return false;
      }
    }
    return true;
  }

  static RejectedRequest checkTransferEncoding(HttpRequest head) {
    List<String> lines = head.headers().getAll(HttpHeaderNames.TRANSFER_ENCODING);
    if (lines.isEmpty()) {
      return null;
    }
    List<String> codings = new ArrayList<>(2);
    for (String line : lines) {
      for (String part : line.split(",", -1)) {
        String coding = part.trim().toLowerCase(Locale.ROOT);
        int params = coding.indexOf(';');
        codings.add(params < 0 ? coding : coding.substring(0, params).trim());
      }
    }
    String shown = printable(String.join(", ", lines));
    if (head.protocolVersion().equals(HttpVersion.HTTP_1_0)) {
      return bad("Transfer-Encoding: " + shown + " on HTTP/1.0 (expected: Content-Length; RFC 9112 section 6.1)");
    }
    String last = codings.get(codings.size() - 1);
    if (!last.equals("chunked")) {
      return bad("Transfer-Encoding: " + shown
          + " does not end with chunked, so the body length cannot be determined (RFC 9112 section 6.3)");
    }
    if (codings.size() == 1) {
      return null;
    }
    if (codings.subList(0, codings.size() - 1).contains("chunked")) {
      return bad("Transfer-Encoding: " + shown + " applies chunked more than once (RFC 9112 section 6.1)");
    }
    return new RejectedRequest(HttpResponseStatus.NOT_IMPLEMENTED, "Transfer-Encoding: " + shown
        + " is not supported (expected: chunked alone, or Content-Length; RFC 9112 section 6.1)");
  }

  private static RejectedRequest bad(String message) {
    return new RejectedRequest(HttpResponseStatus.BAD_REQUEST, message);
  }

  private static String printable(String s) {
    String shown = s.length() > 100 ? s.substring(0, 100) + "..." : s;
    StringBuilder sb = new StringBuilder(shown.length() + 2).append('"');
    for (int i = 0; i < shown.length(); i++) {
      char c = shown.charAt(i);
      sb.append(c < 0x20 || c >= 0x7f ? '?' : c);
    }
    return sb.append('"').toString();
  }
}
