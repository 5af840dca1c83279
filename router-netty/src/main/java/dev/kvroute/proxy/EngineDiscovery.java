package dev.kvroute.proxy;

import dev.kvroute.proxy.config.HealthCheckConfig;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Capacity and restart discovery from a backend's {@code /metrics} ({@link EngineScrape}).
 *
 * <p>Capacity: a backend added without a configured capacity has it read from its {@code /metrics}
 * (vLLM's {@code vllm:cache_config_info}, SGLang's {@code sglang:max_total_num_tokens}). Until that
 * succeeds the index uses {@code routing.defaultCapacityTokens}; {@link HealthChecker} retries
 * {@link #discoverCapacity} with every probe. The engine's start time is read with it, once.
 *
 * <p>Restart: when a backend turns healthy again after failing its probes, its engine may have
 * restarted with an empty prefix cache, and the index would keep sending its sessions there for hits
 * that are gone. So {@link #afterOutage} reads its {@code /metrics} again: if {@code
 * process_start_time_seconds} changed, or is missing, or was never read, the backend's view in the
 * index is forgotten; the capacity is read again too. A restart quicker than {@code
 * unhealthyThreshold} probes goes unnoticed here, and the view ages out as the engine's cache refills,
 * unless engine load is scraped ({@link EngineLoadScraper} sees the start time move).
 *
 * <p>Thread-safe: the reads complete on the control client's threads; what they share on a {@link
 * Backend} is volatile or atomic.
 */
final class EngineDiscovery {
  private static final System.Logger LOG = System.getLogger(EngineDiscovery.class.getName());

  private final HealthCheckConfig config;
  private final BackendRegistry backends;
  private final ControlClient control;

  EngineDiscovery(HealthCheckConfig config, BackendRegistry backends, ControlClient control) {
    this.config = Objects.requireNonNull(config, "config");
    this.backends = Objects.requireNonNull(backends, "backends");
    this.control = Objects.requireNonNull(control, "control");
  }

  /** Reads {@code b}'s capacity (unless configured) and its engine's start time, until both are read once. */
  void discoverCapacity(Backend b) {
    if ((b.capacityKnown() && b.metricsRead()) || b.removed()) {
      return;
    }
    control.get(b.config(), "/metrics", null, config.timeout()).whenComplete((r, e) -> {
      if (e != null || !r.ok()) {
        return;
      }
      EngineScrape read = EngineScrape.read(new String(r.body(), StandardCharsets.UTF_8));
      if (!b.metricsRead()) {
        b.engineStartSeconds(read.startSeconds());
        b.metricsRead(true);
      }
      long tokens = read.capacityTokens();
      if (tokens > 0 && !b.capacityKnown()) {
        backends.capacityDiscovered(b, tokens);
        LOG.log(Level.INFO, "backend {0}: KV capacity {1} tokens (from /metrics)", b.id(), String.valueOf(tokens));
      }
    });
  }

  /** After {@code b} recovered: forgets its index view if its engine restarted (see the class doc). */
  void afterOutage(Backend b) {
    control.get(b.config(), "/metrics", null, config.timeout()).whenComplete((r, e) -> {
      if (b.removed()) {
        return;
      }
      if (e != null || !r.ok()) {
        backends.cacheLost(b);
        b.metricsRead(false); // read the start time again with the next probe
        LOG.log(Level.INFO, "backend {0}: /metrics unreadable after an outage ({1}); its index view is forgotten",
            b.id(), e != null ? e.toString() : "status " + r.status());
        return;
      }
      EngineScrape read = EngineScrape.read(new String(r.body(), StandardCharsets.UTF_8));
      double started = read.startSeconds();
      double known = b.engineStartSeconds();
      if (Double.isNaN(started) || Double.isNaN(known) || started != known) {
        backends.cacheLost(b);
        LOG.log(Level.INFO, "backend {0}: {1}; its index view is forgotten", b.id(),
            Double.isNaN(started) || Double.isNaN(known) ? "engine start time unknown after an outage" : "engine restarted");
      }
      b.engineStartSeconds(started);
      b.metricsRead(true);
      long tokens = read.capacityTokens();
      if (tokens > 0 && tokens != b.capacityTokens()) {
        backends.capacityDiscovered(b, tokens);
      }
    });
  }
}
