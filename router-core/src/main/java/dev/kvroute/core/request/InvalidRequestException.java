package dev.kvroute.core.request;

/**
 * A request body that cannot be routed: malformed JSON, a field of the wrong type, or no prompt. The
 * proxy answers it with HTTP 400 and an OpenAI-style error body
 * ({@code {"error":{"message","type":"BadRequestError","param","code":400}}}).
 */
public final class InvalidRequestException extends Exception {
  private static final long serialVersionUID = 1L;

  private final String param;

  /**
   * @param message what was wrong and what was expected, e.g.
   *     {@code "messages: expected an array, got a string"}
   * @param param the offending field as a dotted path (e.g. {@code messages.2.content}), or
   *     {@code null} when the body as a whole is bad
   */
  public InvalidRequestException(String message, String param) {
    super(message);
    this.param = param;
  }

  /** The offending field as a dotted path, or {@code null}. */
  public String param() {
    return param;
  }
}
