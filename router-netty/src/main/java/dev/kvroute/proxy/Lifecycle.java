package dev.kvroute.proxy;

/**
 * The states of one proxied request, in order (Zuul's passport). A request moves forward through
 * {@link #RECEIVED}, {@link #ROUTED}, {@link #CONNECTED} and {@link #FIRST_BYTE} (a retry goes back to
 * {@link #ROUTED}) and ends in exactly one of the three terminal states.
 */
enum Lifecycle {
  /** The whole request (headers and body) has been read from the client. */
  RECEIVED,
  /** Every backend was saturated: the request waits in the router's queue (admission control). */
  QUEUED,
  /** A backend was chosen (and, for a generation request, its load lease taken). */
  ROUTED,
  /** An upstream connection to the chosen backend is ready and the request is being written. */
  CONNECTED,
  /** The first response body byte arrived from the backend: prefill is done. */
  FIRST_BYTE,
  /** The whole response was relayed to the client. */
  COMPLETED,
  /** The client went away before the response ended; the upstream request was closed (aborted). */
  CANCELLED,
  /** The request ended with an error: no backend, upstream failure, timeout, or a broken stream. */
  FAILED;

  /** Whether this state ends the request. */
  boolean terminal() {
    return this == COMPLETED || this == CANCELLED || this == FAILED;
  }
}
