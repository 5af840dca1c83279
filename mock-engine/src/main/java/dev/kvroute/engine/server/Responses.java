package dev.kvroute.engine.server;

import io.netty.handler.codec.DateFormatter;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import java.util.Date;

/**
 * Bodies of vLLM's error responses ({@code ErrorResponse} in {@code
 * vllm/entrypoints/openai/engine/protocol.py}): {@code {"error":{"message","type","param","code"}}},
 * with the HTTP status equal to {@code code}. Stateless.
 */
final class Responses {
  /** vLLM's {@code type} for request-validation failures (its 422 handler answers 400). */
  static final String BAD_REQUEST = "Bad Request";
  /** vLLM's {@code type} for a {@code ValueError} such as a prompt too long. */
  static final String BAD_REQUEST_ERROR = "BadRequestError";
  static final String NOT_FOUND_ERROR = "NotFoundError";
  static final String INTERNAL_SERVER_ERROR = "InternalServerError";

  private static volatile CachedDate date = new CachedDate(0, "");

  private Responses() {}

  /**
   * The headers uvicorn (vLLM's HTTP server) puts on every response, first: {@code date} (RFC 1123,
   * formatted once per second) and {@code server: uvicorn}.
   */
  static void serverHeaders(HttpHeaders h) {
    long second = System.currentTimeMillis() / 1000;
    CachedDate d = date;
    if (d.second != second) {
      d = new CachedDate(second, DateFormatter.format(new Date(second * 1000)));
      date = d;
    }
    h.set(HttpHeaderNames.DATE, d.text).set(HttpHeaderNames.SERVER, "uvicorn");
  }

  private record CachedDate(long second, String text) {}

  static String error(int code, String type, String message, String param) {
    StringBuilder sb = new StringBuilder(128 + message.length());
    sb.append("{\"error\":{\"message\":");
    Json.quote(sb, message);
    sb.append(",\"type\":");
    Json.quote(sb, type);
    sb.append(",\"param\":");
    Json.quote(sb, param);
    sb.append(",\"code\":").append(code).append("}}");
    return sb.toString();
  }

  /** The {@code type} vLLM would use for a status, for injected {@code status:N} faults. */
  static String typeFor(int status) {
    return switch (status) {
      case 400 -> BAD_REQUEST_ERROR;
      case 401 -> "AuthenticationError";
      case 403 -> "PermissionDeniedError";
      case 404 -> NOT_FOUND_ERROR;
      case 429 -> "RateLimitError";
      case 501 -> "NotImplementedError";
      case 503 -> "ServiceUnavailableError";
      default -> status >= 500 ? INTERNAL_SERVER_ERROR : BAD_REQUEST_ERROR;
    };
  }
}
