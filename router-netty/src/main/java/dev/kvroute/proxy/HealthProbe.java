package dev.kvroute.proxy;

import dev.kvroute.proxy.config.HealthCheckConfig;
import io.netty.channel.EventLoop;
import java.lang.System.Logger.Level;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The active health probe of one backend: {@code GET healthCheck.path}; a 2xx within {@code
 * healthCheck.timeout} is a success, anything else a failure, and the thresholds move the backend
 * between healthy and unhealthy (see {@link HealthCheckConfig}). When a backend turns healthy again
 * after failing its probes, the {@code recovered} action runs (the restart check of {@link
 * EngineDiscovery#afterOutage}, then model discovery). {@link HealthChecker} schedules it.
 *
 * <p>Thread-safe: a probe may start on any thread; its result is applied on {@code loop}.
 */
final class HealthProbe {
  private static final System.Logger LOG = System.getLogger(HealthProbe.class.getName());

  private final HealthCheckConfig config;
  private final ControlClient control;
  private final EventLoop loop;
  private final Consumer<Backend> recovered;

  HealthProbe(HealthCheckConfig config, ControlClient control, EventLoop loop, Consumer<Backend> recovered) {
    this.config = Objects.requireNonNull(config, "config");
    this.control = Objects.requireNonNull(control, "control");
    this.loop = Objects.requireNonNull(loop, "loop");
    this.recovered = Objects.requireNonNull(recovered, "recovered");
  }

  /** Probes {@code b} once; the result moves it between healthy and unhealthy (see the class doc). */
  void probe(Backend b) {
    control.get(b.config(), config.path(), null, config.timeout()).whenComplete((r, e) -> loop.execute(() -> {
      boolean ok = e == null && r.ok();
      if (b.probed(ok, config.healthyThreshold(), config.unhealthyThreshold())) {
        LOG.log(Level.INFO, "backend {0} is now {1} ({2})", b.id(), b.healthy() ? "healthy" : "unhealthy",
            e != null ? e.toString() : "status " + r.status());
        if (b.healthy()) {
          recovered.accept(b);
        }
      }
    }));
  }
}
