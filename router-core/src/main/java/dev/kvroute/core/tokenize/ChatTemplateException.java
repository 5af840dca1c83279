package dev.kvroute.core.tokenize;

/**
 * A chat request that the model's chat template cannot render: the template raised an error
 * ({@code raise_exception}, a failed test, a type error) or the request's messages have a shape the
 * template rejects. vLLM answers such a request with HTTP 400 ({@code BadRequestError}); the router
 * does the same, before choosing a backend.
 */
public final class ChatTemplateException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** @param message what the template said, e.g. {@code "Conversation roles must alternate"} */
  public ChatTemplateException(String message) {
    super(message);
  }

  public ChatTemplateException(String message, Throwable cause) {
    super(message, cause);
  }
}
