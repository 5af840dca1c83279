package dev.kvroute.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;

/**
 * OpenAI-style error responses, the shape vLLM answers with:
 * {@code {"error":{"message":..., "type":..., "param":..., "code":N}}} with the HTTP status equal to
 * {@code code}.
 *
 * <p>Stateless and thread-safe.
 */
final class HttpErrors {
  private static final JsonFactory JSON = new JsonFactory();

  private HttpErrors() {}

  /** The error {@code type} for a status, following the OpenAI SDK's exception names. */
  static String typeFor(HttpResponseStatus status) {
    switch (status.code()) {
      case 400:
        return "BadRequestError";
      case 401:
        return "AuthenticationError";
      case 404:
        return "NotFoundError";
      case 405:
        return "MethodNotAllowedError";
      case 408:
        return "RequestTimeoutError";
      case 409:
        return "ConflictError";
      case 413:
        return "RequestTooLargeError";
      case 414:
        return "URITooLongError";
      case 417:
        return "ExpectationFailedError";
      case 431:
        return "RequestHeaderFieldsTooLargeError";
      case 501:
        return "NotImplementedError";
      case 502:
        return "BadGatewayError";
      case 503:
        return "ServiceUnavailableError";
      case 504:
        return "GatewayTimeoutError";
      case 505:
        return "HTTPVersionNotSupportedError";
      default:
        return status.code() >= 500 ? "InternalServerError" : "BadRequestError";
    }
  }

  /** The JSON body of an error. */
  static ByteBuf body(ByteBufAllocator alloc, HttpResponseStatus status, String message, String param) {
    ByteBuf buf = alloc.buffer(128 + message.length());
    try (OutputStream out = new ByteBufOutputStream(buf);
        JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeObjectFieldStart("error");
      g.writeStringField("message", message);
      g.writeStringField("type", typeFor(status));
      if (param == null) {
        g.writeNullField("param");
      } else {
        g.writeStringField("param", param);
      }
      g.writeNumberField("code", status.code());
      g.writeEndObject();
      g.writeEndObject();
    } catch (IOException e) {
      buf.release();
      throw new UncheckedIOException(e);
    }
    return buf;
  }

  /**
   * A 429 as OpenAI answers a rate limit: {@code {"error":{"message":..., "type":"requests",
   * "param":null, "code":"rate_limit_exceeded"}}}, with {@code Retry-After} in whole seconds.
   */
  static FullHttpResponse rateLimited(ByteBufAllocator alloc, String message, long retryAfterSeconds, boolean keepAlive) {
    ByteBuf buf = alloc.buffer(160 + message.length());
    try (OutputStream out = new ByteBufOutputStream(buf);
        JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeObjectFieldStart("error");
      g.writeStringField("message", message);
      g.writeStringField("type", "requests");
      g.writeNullField("param");
      g.writeStringField("code", "rate_limit_exceeded");
      g.writeEndObject();
      g.writeEndObject();
    } catch (IOException e) {
      buf.release();
      throw new UncheckedIOException(e);
    }
    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.TOO_MANY_REQUESTS, buf);
    r.headers()
        .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
        .setInt(HttpHeaderNames.CONTENT_LENGTH, buf.readableBytes())
        .set(HttpHeaderNames.RETRY_AFTER, Long.toString(retryAfterSeconds));
    if (!keepAlive) {
      r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    }
    return r;
  }

  /**
   * A complete error response with {@code Content-Length} and, unless {@code keepAlive},
   * {@code Connection: close}.
   */
  static FullHttpResponse response(
      ByteBufAllocator alloc, HttpResponseStatus status, String message, String param, boolean keepAlive) {
    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status, body(alloc, status, message, param));
    r.headers()
        .set(HttpHeaderNames.CONTENT_TYPE, HttpHeaderValues.APPLICATION_JSON)
        .setInt(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
    if (!keepAlive) {
      r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
    }
    return r;
  }
}
