package dev.kvroute.core.request;

/** The generation endpoints whose bodies kvroute reads to route. */
public enum Endpoint {
  /** OpenAI {@code POST /v1/chat/completions}. */
  CHAT_COMPLETIONS("/v1/chat/completions"),
  /** OpenAI legacy {@code POST /v1/completions}. */
  COMPLETIONS("/v1/completions"),
  /** SGLang native {@code POST /generate}. */
  SGLANG_GENERATE("/generate");

  private final String path;

  Endpoint(String path) {
    this.path = path;
  }

  /** The request path, e.g. {@code /v1/chat/completions}. */
  public String path() {
    return path;
  }

  /** The endpoint served at {@code path} (query string ignored), or {@code null} for any other path. */
  public static Endpoint forPath(String path) {
    int q = path.indexOf('?');
    String p = q < 0 ? path : path.substring(0, q);
    for (Endpoint e : values()) {
      if (e.path.equals(p)) {
        return e;
      }
    }
    return null;
  }
}
