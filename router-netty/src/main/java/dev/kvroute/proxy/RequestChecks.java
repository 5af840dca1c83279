package dev.kvroute.proxy;

import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.JsonContentType;
import java.util.Locale;
import java.util.function.Function;

/**
 * Header checks of a generation request ({@code /v1/chat/completions}, {@code /v1/completions},
 * {@code /generate}) before its body is parsed, each answered 400 by the router:
 *
 * <ul>
 *   <li>a {@code Content-Type} the engines would not read as JSON ({@link JsonContentType}: vLLM and
 *       SGLang answer such a body 400, so routing it would only cost the router a tokenization and
 *       the engine a round trip);
 *   <li>a priority header ({@code admission.priorityHeader}, {@code x-kvroute-priority} by default)
 *       that is not a decimal integer in the {@code int} range (empty, {@code abc}, {@code 1e9}):
 *       admission orders and sheds by it, and reading a typo as priority 0 would silently give the
 *       request the default class.
 * </ul>
 *
 * <p>Stateless and thread-safe.
 */
final class RequestChecks {
  private RequestChecks() {}

  /**
   * The first failed check of a generation request's headers, or {@code null} when they pass.
   *
   * @param header a header's value by lowercase name ({@code null} when absent)
   * @param priorityHeader the configured priority header's name
   */
  static InvalidRequestException generation(Function<String, String> header, String priorityHeader) {
    String contentType = header.apply("content-type");
    if (!JsonContentType.readsAsJson(contentType)) {
      return new InvalidRequestException("Content-Type: " + contentType + " (expected: application/json; vLLM and"
          + " SGLang do not read a body of another type as JSON and answer it 400)", null);
    }
    String priority = header.apply(priorityHeader.toLowerCase(Locale.ROOT));
    if (priority != null) {
      try {
        Integer.parseInt(priority.strip());
      } catch (NumberFormatException e) {
        return new InvalidRequestException(priorityHeader + ": \"" + printable(priority)
            + "\" (expected: a decimal integer from -2147483648 to 2147483647; lower is served earlier)", null);
      }
    }
    return null;
  }

  /** The header value with control characters shown as {@code ?}, at most 64 characters. */
  private static String printable(String v) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < v.length() && i < 64; i++) {
      char c = v.charAt(i);
      sb.append(c < 0x20 || c == 0x7f || c == '"' || c == '\\' ? '?' : c);
    }
    return v.length() > 64 ? sb.append("...").toString() : sb.toString();
  }
}
