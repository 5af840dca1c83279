package dev.kvroute.proxy;

/** How a proxied request ended; the {@code outcome} tag of {@code kvroute.requests}. */
enum Outcome {
  /** The backend's 1xx–3xx response was relayed whole. */
  SUCCESS("success"),
  /** The backend's 4xx response was relayed whole. */
  CLIENT_ERROR("client_error"),
  /** The backend's 5xx response was relayed (after retries, when they applied). */
  SERVER_ERROR("server_error"),
  /** The router refused the request (413, 414, 431, 400, 417, 404): it never reached a backend. */
  REJECTED("rejected"),
  /** No backend was healthy, or the router closed with the request not yet answered (503). */
  UNAVAILABLE("unavailable"),
  /** The upstream failed after retries (502, 504) or the response broke off mid-stream. */
  FAILED("failed"),
  /** The router's queue refused the request (429: full, shed or deadline). */
  RATE_LIMITED("rate_limited"),
  /** The client disconnected before the response ended. */
  CANCELLED("cancelled");

  private final String tag;

  Outcome(String tag) {
    this.tag = tag;
  }

  String tag() {
    return tag;
  }
}
