package dev.kvroute.proxy;

import dev.kvroute.core.load.BackendLoad;
import dev.kvroute.proxy.config.HealthCheckConfig;
import io.netty.channel.EventLoop;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * Engine-load scraping: one backend's {@code /metrics} read ({@link EngineScrape}) for the engine's
 * own load gauges, fed to the load tracker together with the router's own counts taken when the
 * scrape was sent ({@link dev.kvroute.core.load.LoadTracker#reportEngine}), and for its LoRA adapters
 * ({@link LoraAffinity}). {@link HealthChecker} schedules it every {@code
 * healthCheck.engineLoadInterval}.
 *
 * <p>A scrape waits up to {@code healthCheck.timeout}; one still running when the next is due is not
 * doubled. After {@value #FAILED_SCRAPES_KEPT} consecutive failed scrapes (no answer, an error status,
 * or no load gauges in it) the last report is dropped (no foreign load is assumed) and a warning is
 * logged, once until the load is read again.
 *
 * <p>The same scrape reads {@code process_start_time_seconds}: when it moves forward, the engine
 * restarted, however quickly, so the backend's index view is forgotten and the {@code restarted}
 * action runs (model discovery). When it moves back, the URL reaches more than one engine (a load
 * balancer); that is logged once and nothing is forgotten, so the view is not dropped at every
 * scrape.
 *
 * <p>Thread-safe: a scrape may start on any thread; its result is applied on {@code loop}.
 */
final class EngineLoadScraper {
  private static final System.Logger LOG = System.getLogger(EngineLoadScraper.class.getName());

  /** Consecutive failed load scrapes after which the last report is dropped (then logged). */
  static final int FAILED_SCRAPES_KEPT = 3;

  private final HealthCheckConfig config;
  private final BackendRegistry backends;
  private final ControlClient control;
  private final EventLoop loop;
  private final Consumer<Backend> restarted;

  EngineLoadScraper(HealthCheckConfig config, BackendRegistry backends, ControlClient control, EventLoop loop,
      Consumer<Backend> restarted) {
    this.config = Objects.requireNonNull(config, "config");
    this.backends = Objects.requireNonNull(backends, "backends");
    this.control = Objects.requireNonNull(control, "control");
    this.loop = Objects.requireNonNull(loop, "loop");
    this.restarted = Objects.requireNonNull(restarted, "restarted");
  }

  /**
   * Scrapes {@code b}'s engine load and start time (see the class doc), unless it was removed or a
   * scrape of it is still running.
   *
   * @throws RuntimeException if the request cannot be started (the backend stays scrapable)
   */
  void scrape(Backend b) {
    if (b.removed() || !b.startLoadScrape()) {
      return;
    }
    BackendLoad asked = backends.load(b);
    CompletableFuture<ControlClient.Response> reply;
    try {
      reply = control.get(b.config(), "/metrics", null, config.timeout());
    } catch (RuntimeException e) {
      b.endLoadScrape(); // or this backend would never be scraped again
      throw e;
    }
    reply.whenComplete((r, e) -> loop.execute(() -> {
      b.endLoadScrape();
      String text = e == null && r.ok() ? new String(r.body(), StandardCharsets.UTF_8) : null;
      EngineScrape read = text == null ? null : EngineScrape.read(text);
      if (read == null || read.load() == null) {
        String why = text == null ? (e != null ? e.toString() : "status " + r.status())
            : "no vllm:num_requests_running/waiting (nor SGLang's) in it";
        if (b.loadScrapeFailed() == FAILED_SCRAPES_KEPT) {
          // a missed scrape or two keeps the last report (an overloaded engine answers slowly)
          backends.engineLoad(b, null, asked);
          LOG.log(Level.WARNING, "backend {0}: cannot read its load from /metrics ({1}); counting no "
              + "foreign load on it until it can", b.id(), why);
        }
      } else {
        if (b.loadScrapeSucceeded() > FAILED_SCRAPES_KEPT) {
          LOG.log(Level.INFO, "backend {0}: its load is read from /metrics again", b.id());
        }
        backends.engineLoad(b, read.load(), asked);
      }
      if (read == null) {
        return;
      }
      b.lora(read.lora()); // the adapters running and waiting (LoRA affinity)
      startTimeRead(b, read.startSeconds());
    }));
  }

  /** Compares the engine's start time with the last one read (see the class doc). */
  private void startTimeRead(Backend b, double started) {
    double known = b.engineStartSeconds();
    if (Double.isNaN(started)) {
      return;
    }
    if (b.metricsRead() && !Double.isNaN(known) && started < known) {
      // a restart only moves the start time forward: this is another engine behind the same URL
      if (b.firstEarlierStartTime()) {
        LOG.log(Level.WARNING, "backend {0}: /metrics reports an earlier process start time ({1}) than "
            + "before ({2}): the URL seems to reach several engines (a load balancer?), so the router "
            + "cannot know which one caches what; register each engine as a backend",
            b.id(), String.valueOf(started), String.valueOf(known));
      }
      return;
    }
    if (b.metricsRead() && !Double.isNaN(known) && started > known) {
      backends.cacheLost(b);
      restarted.accept(b);
      LOG.log(Level.INFO, "backend {0}: engine restarted (process_start_time_seconds {1} -> {2}); "
          + "its index view is forgotten", b.id(), String.valueOf(known), String.valueOf(started));
    }
    b.engineStartSeconds(started);
    b.metricsRead(true);
  }
}
