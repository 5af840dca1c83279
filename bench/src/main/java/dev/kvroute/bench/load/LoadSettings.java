package dev.kvroute.bench.load;

import java.net.URI;
import java.time.Duration;
import java.util.List;
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
 * @param splitTargets further router replicas in front of the same engines: request {@code n} of the
 *     run, in send order, goes to {@code target} followed by these, {@code n} modulo their number (a
 *     round-robin split, as the simulator's {@code --routers}, so a session's turns visit every
 *     replica); empty (default) for one router
 */
public record LoadSettings(
    URI target, double timeScale, String model, Duration requestTimeout, int ioThreads, List<URI> splitTargets) {
  public LoadSettings {
    Objects.requireNonNull(target, "target");
    splitTargets = List.copyOf(splitTargets);
    Objects.requireNonNull(requestTimeout, "requestTimeout");
    if (!(timeScale > 0)) {
      throw new IllegalArgumentException("timeScale: " + timeScale + " (expected: > 0)");
    }
    if (ioThreads < 1) {
      throw new IllegalArgumentException("ioThreads: " + ioThreads + " (expected: >= 1)");
    }
  }

  /** One router. */
  public LoadSettings(URI target, double timeScale, String model, Duration requestTimeout, int ioThreads) {
    this(target, timeScale, model, requestTimeout, ioThreads, List.of());
  }

  /** Every router replica the requests are split across: {@code target}, then {@code splitTargets}. */
  public List<URI> targets() {
    List<URI> all = new java.util.ArrayList<>(1 + splitTargets.size());
    all.add(target);
    all.addAll(splitTargets);
    return all;
  }

  /** A copy whose requests are split round-robin across {@code targets} (the first is {@code target}). */
  public LoadSettings withTargets(List<URI> targets) {
    if (targets.isEmpty()) {
      throw new IllegalArgumentException("targets: none (expected: at least one router URL)");
    }
    return new LoadSettings(targets.get(0), timeScale, model, requestTimeout, ioThreads,
        targets.subList(1, targets.size()));
  }

  /** Settings with a 10-minute request timeout and one I/O thread. */
  public static LoadSettings of(URI target, double timeScale, String model) {
    return new LoadSettings(target, timeScale, model, Duration.ofMinutes(10), 1);
  }
}
