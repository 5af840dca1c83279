package dev.kvroute.bench.load;

import java.net.URI;
import java.time.Duration;
import java.util.Objects;

/**
 * How the load driver sends a workload to a router (or a single engine).
 *
 * <p>Immutable and thread-safe.
 *
 * @param target base URL of the router, e.g. {@code http://127.0.0.1:8080}
 * @param timeScale the engines' time scale K: the workload's model times (session starts, think times)
 *     are divided by K to get wall times, and measured wall times are multiplied by K to report model
 *     seconds; 1 for a real fleet
 * @param model the {@code model} field to send, or {@code null} to use the first model the target's
 *     {@code /v1/models} lists
 * @param requestTimeout wall time after which an unfinished request fails
 * @param ioThreads event loop threads of the HTTP client
 */
public record LoadSettings(URI target, double timeScale, String model, Duration requestTimeout, int ioThreads) {
  public LoadSettings {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(requestTimeout, "requestTimeout");
    if (!(timeScale > 0)) {
      throw new IllegalArgumentException("timeScale: " + timeScale + " (expected: > 0)");
    }
    if (ioThreads < 1) {
      throw new IllegalArgumentException("ioThreads: " + ioThreads + " (expected: >= 1)");
    }
  }

  /** Settings with a 10-minute request timeout and one I/O thread. */
  public static LoadSettings of(URI target, double timeScale, String model) {
    return new LoadSettings(target, timeScale, model, Duration.ofMinutes(10), 1);
  }
}
