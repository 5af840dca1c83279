package dev.kvroute.proxy;

import java.util.Locale;

/**
 * A request-target reduced to one unambiguous origin-form ({@code /path[?query]}), or refused.
 *
 * <p>kvroute matches a path and forwards the same bytes to an engine, so a path must mean the same
 * thing to the router, to the engine (uvicorn percent-decodes the path before Starlette routes it)
 * and to anything between them (servlet containers strip {@code ;} parameters, some servers treat
 * {@code \} as {@code /} or merge {@code //}). Rather than resolve dot-segments (RFC 3986 §5.2.4),
 * kvroute refuses every form a server might read differently, with 400:
 *
 * <ul>
 *   <li>a dot-segment ({@code .} or {@code ..}), literal or percent-encoded in any case
 *       ({@code %2e%2e}, {@code .%2E}), also before a {@code ;};
 *   <li>an empty segment ({@code //}) other than a trailing {@code /};
 *   <li>{@code ;} (path parameters), {@code \}, and any character outside RFC 3986's {@code pchar};
 *   <li>a percent-encoded {@code /}, {@code \}, {@code ;}, {@code %} (double encoding), or control
 *       character; a malformed escape ({@code %zz}).
 * </ul>
 *
 * Clients resolve dot-segments before sending (RFC 3986 §5.2; curl, browsers, the OpenAI SDKs), so
 * no well-behaved client is refused. Accepted paths are normalized as RFC 3986 §6.2.2 allows: escapes
 * of unreserved characters are decoded ({@code %61} → {@code a}) and other escapes upper-cased;
 * the router matches and forwards that normalized form.
 *
 * <p>An absolute-form target ({@code http://host/path}, RFC 9112 §3.2.2) is accepted and reduced to
 * its path and query; its authority is ignored (the router forwards to its own backends). The query
 * is kept as sent, refused only for control, space, non-ASCII or {@code #} characters.
 *
 * <p>Immutable and thread-safe.
 *
 * @param path the normalized path, starting with {@code /}
 * @param query the query without {@code ?}, or {@code null}
 */
record RequestTarget(String path, String query) {

  /** Why a request-target was refused; the message is meant for the client's 400 body. */
  static final class InvalidTargetException extends Exception {
    private static final long serialVersionUID = 1L;

    InvalidTargetException(String message) {
      super(message, null, false, false);
    }
  }

  /** {@code path[?query]}, what is forwarded. */
  String originForm() {
    return query == null ? path : path + "?" + query;
  }

  /**
   * Parses {@code uri}, the request-target as received.
   *
   * @throws InvalidTargetException saying what was refused
   */
  static RequestTarget parse(String uri) throws InvalidTargetException {
    String t = uri;
    if (!t.startsWith("/")) {
      t = absoluteFormPath(uri);
    }
    if (t.indexOf('#') >= 0) {
      throw new InvalidTargetException("request target " + quote(uri) + " has a fragment ('#')");
    }
    int q = t.indexOf('?');
    String rawPath = q < 0 ? t : t.substring(0, q);
    String query = q < 0 ? null : t.substring(q + 1);
    if (query != null) {
      for (int i = 0; i < query.length(); i++) {
        char c = query.charAt(i);
        if (c <= 0x20 || c >= 0x7f) {
          throw new InvalidTargetException("request target " + quote(uri) + ": character 0x"
              + Integer.toHexString(c) + " in the query (expected: percent-encoded)");
        }
      }
    }
    return new RequestTarget(normalizePath(rawPath, uri), query);
  }

  /** The path and query of an absolute-form target, {@code "/"} when it has no path. */
  private static String absoluteFormPath(String uri) throws InvalidTargetException {
    String lower = uri.toLowerCase(Locale.ROOT);
    int start;
    if (lower.startsWith("http://")) {
      start = 7;
    } else if (lower.startsWith("https://")) {
      start = 8;
    } else {
      throw new InvalidTargetException("request target " + quote(uri)
          + " (expected: a path such as /v1/chat/completions, or an http:// URL)");
    }
    int end = start;
    while (end < uri.length() && uri.charAt(end) != '/' && uri.charAt(end) != '?' && uri.charAt(end) != '#') {
      end++;
    }
    if (end == start) {
      throw new InvalidTargetException("request target " + quote(uri) + " has no host");
    }
    String rest = uri.substring(end);
    return rest.isEmpty() || rest.charAt(0) != '/' ? "/" + rest : rest;
  }

  /**
   * The normalized form of {@code raw} (which starts with {@code /}), or why it is refused.
   *
   * @param uri the whole target, for the message
   */
  static String normalizePath(String raw, String uri) throws InvalidTargetException {
    StringBuilder out = new StringBuilder(raw.length());
    int segmentStart = 0; // index in out of the current segment's first character
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c == '/') {
        if (i > 0) {
          checkSegment(out, segmentStart, uri, i == raw.length() - 1 ? false : true);
        }
        out.append('/');
        segmentStart = out.length();
      } else if (c == '%') {
        if (i + 2 >= raw.length() || hex(raw.charAt(i + 1)) < 0 || hex(raw.charAt(i + 2)) < 0) {
          throw new InvalidTargetException("path of " + quote(uri) + " has a malformed percent-escape");
        }
        char d = (char) (hex(raw.charAt(i + 1)) * 16 + hex(raw.charAt(i + 2)));
        if (unreserved(d)) {
          out.append(d);
        } else if (d == '/' || d == '\\' || d == ';' || d == '%' || d < 0x20 || d == 0x7f) {
          throw new InvalidTargetException("path of " + quote(uri) + " has an encoded "
              + describe(d) + " (" + raw.substring(i, i + 3) + "), which servers decode differently");
        } else {
          out.append('%').append(Character.toUpperCase(raw.charAt(i + 1))).append(Character.toUpperCase(raw.charAt(i + 2)));
        }
        i += 2;
      } else if (c == ';') {
        throw new InvalidTargetException("path of " + quote(uri) + " has a ';' (path parameters are not supported)");
      } else if (c == '\\') {
        throw new InvalidTargetException("path of " + quote(uri) + " has a '\\' (expected: '/' between segments)");
      } else if (pchar(c)) {
        out.append(c);
      } else {
        throw new InvalidTargetException("path of " + quote(uri) + " has " + describe(c)
            + " (expected: percent-encoded)");
      }
    }
    checkSegment(out, segmentStart, uri, false);
    return out.toString();
  }

  private static void checkSegment(StringBuilder out, int start, String uri, boolean inner)
      throws InvalidTargetException {
    int len = out.length() - start;
    if (len == 0 && inner) {
      throw new InvalidTargetException("path of " + quote(uri) + " has an empty segment ('//')");
    }
    if ((len == 1 && out.charAt(start) == '.') || (len == 2 && out.charAt(start) == '.' && out.charAt(start + 1) == '.')) {
      throw new InvalidTargetException("path of " + quote(uri)
          + " has a dot-segment ('.' or '..', also when percent-encoded); send the resolved path");
    }
  }

  /** RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
  private static boolean unreserved(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
        || c == '-' || c == '.' || c == '_' || c == '~';
  }

  /** RFC 3986 pchar without pct-encoded and without ';': unreserved, sub-delims, ':' and '@'. */
  private static boolean pchar(char c) {
    return unreserved(c) || "!$&'()*+,=:@".indexOf(c) >= 0;
  }

  private static int hex(char c) {
    return Character.digit(c, 16);
  }

  private static String describe(char c) {
    if (c < 0x20 || c == 0x7f) {
      return "control character 0x" + Integer.toHexString(c);
    }
    if (c > 0x7e) {
      return "non-ASCII character";
    }
    return "'" + c + "'";
  }

  private static String quote(String uri) {
    String shown = uri.length() > 200 ? uri.substring(0, 200) + "..." : uri;
    StringBuilder sb = new StringBuilder(shown.length() + 2).append('"');
    for (int i = 0; i < shown.length(); i++) {
      char c = shown.charAt(i);
      sb.append(c < 0x20 || c >= 0x7f ? '?' : c);
    }
    return sb.append('"').toString();
  }
}
