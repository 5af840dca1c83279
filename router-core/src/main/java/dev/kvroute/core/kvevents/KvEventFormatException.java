package dev.kvroute.core.kvevents;

/** A KV-event payload that is not a msgpack {@code KVEventBatch} in any layout vLLM has published. */
public final class KvEventFormatException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  KvEventFormatException(String message) {
    super(message);
  }

  KvEventFormatException(String message, Throwable cause) {
    super(message, cause);
  }
}
