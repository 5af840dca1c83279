package dev.kvroute.core.request;

import java.util.Locale;

/**
 * Whether a request's {@code Content-Type} lets vLLM and SGLang read its body as JSON. Both serve the
 * OpenAI API with FastAPI, which parses a body as JSON only when the header is absent or empty or names
 * {@code application/json} or an {@code application/*+json} type (parameters and case ignored);
 * any other type ({@code text/plain}, {@code application/x-www-form-urlencoded}, a malformed value)
 * leaves the body as bytes, which the request model refuses with 400 "Input should be a valid
 * dictionary or object to extract fields from". Source: FastAPI's {@code fastapi/routing.py}
 * ({@code get_request_handler}), which reads the header with Python's {@code email.message}.
 *
 * <p>Stateless and thread-safe.
 */
public final class JsonContentType {
  private JsonContentType() {}

  /** Whether a body sent with this {@code Content-Type} (null when absent) is read as JSON. */
  public static boolean readsAsJson(String contentType) {
    if (contentType == null || contentType.isEmpty()) {
      return true; // FastAPI: "if not content_type_value", then JSON
    }
    int semi = contentType.indexOf(';');
    String type = (semi < 0 ? contentType : contentType.substring(0, semi)).strip().toLowerCase(Locale.ROOT);
    int slash = type.indexOf('/');
    if (slash < 0 || type.indexOf('/', slash + 1) >= 0) {
      return false; // email.message reads a value without exactly one '/' as text/plain
    }
    String main = type.substring(0, slash);
    String sub = type.substring(slash + 1);
    return main.equals("application") && (sub.equals("json") || sub.endsWith("+json"));
  }
}
