package dev.kvroute.proxy.config;

/**
 * Write-buffer water marks of every channel (client and upstream). When a channel's outbound buffer
 * grows above {@code highWaterMarkBytes} it turns unwritable and the router stops reading from the
 * other side; reading resumes once the buffer drains below {@code lowWaterMarkBytes}. So at most
 * about {@code highWaterMarkBytes} plus one read (≤ 64 KiB) of response is buffered per stream.
 *
 * <p>Immutable and thread-safe.
 *
 * @param lowWaterMarkBytes writable again below this. Default 32 KiB
 * @param highWaterMarkBytes unwritable above this. Default 64 KiB
 */
public record WriteBufferConfig(int lowWaterMarkBytes, int highWaterMarkBytes) {
  public WriteBufferConfig {
    Checks.positive("lowWaterMarkBytes", lowWaterMarkBytes);
    if (highWaterMarkBytes < lowWaterMarkBytes) {
      throw new IllegalArgumentException("highWaterMarkBytes: " + highWaterMarkBytes
          + " (expected: >= lowWaterMarkBytes " + lowWaterMarkBytes + ")");
    }
  }

  public static WriteBufferConfig defaults() {
    return new WriteBufferConfig(32 << 10, 64 << 10);
  }
}
