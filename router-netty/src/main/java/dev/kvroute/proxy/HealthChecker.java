package dev.kvroute.proxy;

import dev.kvroute.proxy.config.HealthCheckConfig;
import io.netty.channel.EventLoop;
import java.lang.System.Logger.Level;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Schedules the router's background reads of its backends, each done by its own class, on one event
 * loop:
 *
 * <ul>
 *   <li>every {@code healthCheck.interval}, each backend's health probe ({@link HealthProbe}) and,
 *       until read, its capacity ({@link EngineDiscovery#discoverCapacity}); a new backend is probed
 *       at once ({@link #probeNow});
 *   <li>when a backend turns healthy again after an outage, the restart check ({@link
 *       EngineDiscovery#afterOutage}) and the {@link #onRecovered} hook;
 *   <li>every {@code healthCheck.engineLoadInterval} (default 1 s; {@code 0} = off), each backend's
 *       engine-load scrape ({@link EngineLoadScraper}), which also sees quick restarts.
 * </ul>
 *
 * <p>All of them read {@code /metrics} through {@link EngineScrape}, over router-core's Prometheus text
 * reader. One backend's failure to start a probe or scrape is logged and does not stop the schedule.
 *
 * <p>Thread-safe: probe and scrape results are applied on the event loop; the capacity and restart
 * reads complete on the control client's threads. What they share on a {@link Backend} is volatile or
 * atomic.
 */
final class HealthChecker implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(HealthChecker.class.getName());

  private final HealthCheckConfig config;
  private final BackendRegistry backends;
  private final EventLoop loop;
  private final HealthProbe probe;
  private final EngineLoadScraper scraper;
  private final EngineDiscovery discovery;
  private ScheduledFuture<?> task;
  private ScheduledFuture<?> loadTask;
  private volatile Consumer<Backend> onRecovered = b -> {};

  HealthChecker(HealthCheckConfig config, BackendRegistry backends, ControlClient control, EventLoop loop) {
    this.config = config;
    this.backends = backends;
    this.loop = loop;
    this.discovery = new EngineDiscovery(config, backends, control);
    this.probe = new HealthProbe(config, control, loop, b -> {
      discovery.afterOutage(b);
      onRecovered.accept(b);
    });
    this.scraper = new EngineLoadScraper(config, backends, control, loop, b -> onRecovered.accept(b));
  }

  /**
   * A hook run when a backend turns healthy again after an outage, or its engine restarted (what it
   * serves may have changed: model discovery reads it again).
   */
  void onRecovered(Consumer<Backend> hook) {
    this.onRecovered = hook;
  }

  /** Starts the periodic probes (when enabled). */
  void start() {
    if (config.enabled()) {
      long interval = config.interval().toNanos();
      task = loop.scheduleAtFixedRate(this::probeAll, interval, interval, TimeUnit.NANOSECONDS);
    }
    if (config.engineLoadEnabled()) {
      long interval = config.engineLoadInterval().toNanos();
      loadTask = loop.scheduleAtFixedRate(this::scrapeAll, 0, interval, TimeUnit.NANOSECONDS);
    }
  }

  /** Probes {@code b} now and reads its capacity if unknown. */
  void probeNow(Backend b) {
    if (config.enabled()) {
      probe.probe(b);
    }
    discovery.discoverCapacity(b);
  }

  private void probeAll() {
    for (Backend b : backends.all()) {
      try {
        probe.probe(b);
        discovery.discoverCapacity(b);
      } catch (RuntimeException e) {
        // one backend's failure must not stop the periodic task, which would end probing for all
        LOG.log(Level.WARNING, "backend " + b.id() + ": probe failed to start: " + e);
      }
    }
  }

  private void scrapeAll() {
    for (Backend b : backends.all()) {
      try {
        scraper.scrape(b);
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "backend " + b.id() + ": load scrape failed to start: " + e);
      }
    }
  }

  @Override
  public void close() {
    if (task != null) {
      task.cancel(false);
    }
    if (loadTask != null) {
      loadTask.cancel(false);
    }
  }
}
