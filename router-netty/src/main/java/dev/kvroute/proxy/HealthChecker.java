package dev.kvroute.proxy;

import dev.kvroute.core.load.BackendLoad;
import dev.kvroute.core.load.EngineLoad;
import dev.kvroute.proxy.config.HealthCheckConfig;
import io.netty.channel.EventLoop;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Active health checks and KV-capacity discovery.
 *
 * <p>Every {@code healthCheck.interval} each backend gets {@code GET healthCheck.path}; a 2xx within
 * {@code healthCheck.timeout} is a success, anything else a failure, and the thresholds move the
 * backend between healthy and unhealthy (see {@link HealthCheckConfig}). A new backend is probed at
 * once.
 *
 * <p>A backend added without a configured capacity has its capacity read from its
 * {@code /metrics}: vLLM's {@code vllm:cache_config_info{num_gpu_blocks="N",block_size="B"}} gives
 * {@code N × B} tokens, SGLang's {@code sglang:max_total_num_tokens} gives it directly. Until that
 * succeeds the index uses {@code routing.defaultCapacityTokens}; discovery is retried with every
 * probe.
 *
 * <p>When a backend turns healthy again after failing its probes, its engine may have restarted with
 * an empty prefix cache, and the index would keep sending its sessions there for hits that are gone.
 * So its {@code /metrics} is read again: if {@code process_start_time_seconds} (prometheus_client's
 * process collector, in vLLM's exposition) changed, or is missing, or was never read, the backend's
 * view in the index is forgotten; the capacity is read again too. A restart quicker than
 * {@code unhealthyThreshold} probes goes unnoticed, and the view ages out as the engine's cache
 * refills, unless engine load is scraped (below).
 *
 * <p>Every {@code healthCheck.engineLoadInterval} (default 1 s; {@code 0} = off) each backend's
 * {@code /metrics} is scraped for the engine's own load gauges, fed to the load tracker together with
 * the router's own counts taken when the scrape was sent ({@link
 * dev.kvroute.core.load.LoadTracker#reportEngine}): vLLM's {@code vllm:num_requests_running},
 * {@code vllm:num_requests_waiting}, {@code vllm:kv_cache_usage_perc} (or the older
 * {@code vllm:gpu_cache_usage_perc}), else SGLang's {@code sglang:num_running_reqs},
 * {@code sglang:num_queue_reqs}, {@code sglang:token_usage}; series with several label sets (data
 * parallel engines) are summed, KV usage averaged. A scrape waits up to {@code healthCheck.timeout};
 * one still running when the next is due is not doubled. After {@value #FAILED_SCRAPES_KEPT}
 * consecutive failed scrapes (no answer, an error status, or no load gauges in it) the last report is
 * dropped (no foreign load is assumed) and a warning is logged, once until the load is read again. The same scrape reads {@code process_start_time_seconds}: when it moves forward, the
 * engine restarted, however quickly, and the backend's index view is forgotten. When it moves back,
 * the URL reaches more than one engine (a load balancer); that is logged once and nothing is
 * forgotten, so the view is not dropped at every scrape.
 *
 * <p>Thread-safe: health probe and load scrape results are applied on one event loop; the capacity
 * and restart reads complete on the control client's threads. What they share on a {@link Backend}
 * is volatile or atomic.
 */
final class HealthChecker implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(HealthChecker.class.getName());
  private static final Pattern VLLM_BLOCKS = Pattern.compile("num_gpu_blocks=\"(\\d+)\"");
  private static final Pattern VLLM_BLOCK_SIZE = Pattern.compile("block_size=\"(\\d+)\"");
  private static final Pattern SGLANG_TOKENS =
      Pattern.compile("(?m)^sglang:max_total_num_tokens(?:\\{[^}]*})?\\s+([0-9.eE+]+)");
  private static final Pattern PROCESS_START =
      Pattern.compile("(?m)^process_start_time_seconds(?:\\{[^}]*})?\\s+([0-9.eE+]+)");

  /** Consecutive failed load scrapes after which the last report is dropped (then logged). */
  static final int FAILED_SCRAPES_KEPT = 3;

  private final HealthCheckConfig config;
  private final BackendRegistry backends;
  private final ControlClient control;
  private final EventLoop loop;
  private ScheduledFuture<?> task;
  private ScheduledFuture<?> loadTask;
  private volatile java.util.function.Consumer<Backend> onRecovered = b -> {};

  HealthChecker(HealthCheckConfig config, BackendRegistry backends, ControlClient control, EventLoop loop) {
    this.config = config;
    this.backends = backends;
    this.control = control;
    this.loop = loop;
  }

  /**
   * A hook run when a backend turns healthy again after an outage, or its engine restarted (what it
   * serves may have changed: model discovery reads it again).
   */
  void onRecovered(java.util.function.Consumer<Backend> hook) {
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
      probe(b);
    }
    discoverCapacity(b);
  }

  private void probeAll() {
    for (Backend b : backends.all()) {
      try {
        probe(b);
        discoverCapacity(b);
      } catch (RuntimeException e) {
        // one backend's failure must not stop the periodic task, which would end probing for all
        LOG.log(Level.WARNING, "backend " + b.id() + ": probe failed to start: " + e);
      }
    }
  }

  private void probe(Backend b) {
    control.get(b.config(), config.path(), null, config.timeout()).whenComplete((r, e) -> loop.execute(() -> {
      boolean ok = e == null && r.ok();
      if (b.probed(ok, config.healthyThreshold(), config.unhealthyThreshold())) {
        LOG.log(Level.INFO, "backend {0} is now {1} ({2})", b.id(), b.healthy() ? "healthy" : "unhealthy",
            e != null ? e.toString() : "status " + r.status());
        if (b.healthy()) {
          checkRestart(b);
          onRecovered.accept(b);
        }
      }
    }));
  }

  private void scrapeAll() {
    for (Backend b : backends.all()) {
      try {
        scrapeLoad(b);
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "backend " + b.id() + ": load scrape failed to start: " + e);
      }
    }
  }

  /** Scrapes {@code b}'s engine load and start time (see the class doc). */
  private void scrapeLoad(Backend b) {
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
      EngineLoad load = text == null ? null : parseEngineLoad(text);
      if (load == null) {
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
        backends.engineLoad(b, load, asked);
      }
      if (text == null) {
        return;
      }
      b.lora(LoraAffinity.parse(text)); // the adapters running and waiting (LoRA affinity)
      double started = parseStartSeconds(text);
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
        onRecovered.accept(b);
        LOG.log(Level.INFO, "backend {0}: engine restarted (process_start_time_seconds {1} -> {2}); "
            + "its index view is forgotten", b.id(), String.valueOf(known), String.valueOf(started));
      }
      b.engineStartSeconds(started);
      b.metricsRead(true);
    }));
  }

  /**
   * The engine's load gauges from a Prometheus text exposition (vLLM's names, else SGLang's; see the
   * class doc), or {@code null} when it has neither running nor waiting gauge.
   */
  static EngineLoad parseEngineLoad(String metricsText) {
    // running, waiting, KV usage, KV usage under vLLM's deprecated name: sums and series counts
    double[] vllm = new double[4];
    int[] vllmSeen = new int[4];
    double[] sglang = new double[4];
    int[] sglangSeen = new int[4];
    for (String line : metricsText.split("\n")) {
      if (line.isEmpty() || line.charAt(0) == '#') {
        continue;
      }
      int brace = line.indexOf('{');
      int space = line.indexOf(' ');
      int nameEnd = brace >= 0 && (space < 0 || brace < space) ? brace : space;
      if (nameEnd <= 0) {
        continue;
      }
      String name = line.substring(0, nameEnd);
      int slot = switch (name) {
        case "vllm:num_requests_running", "sglang:num_running_reqs" -> 0;
        case "vllm:num_requests_waiting", "sglang:num_queue_reqs" -> 1;
        case "vllm:kv_cache_usage_perc", "sglang:token_usage" -> 2;
        case "vllm:gpu_cache_usage_perc" -> 3;
        default -> -1;
      };
      double v = slot < 0 ? Double.NaN : sampleValue(line, nameEnd);
      if (!(v >= 0) || Double.isInfinite(v)) {
        continue;
      }
      boolean sg = name.startsWith("sglang:");
      (sg ? sglang : vllm)[slot] += v;
      (sg ? sglangSeen : vllmSeen)[slot]++;
    }
    if (vllmSeen[0] + vllmSeen[1] > 0) {
      return engineLoad(vllm, vllmSeen);
    }
    if (sglangSeen[0] + sglangSeen[1] > 0) {
      return engineLoad(sglang, sglangSeen);
    }
    return null;
  }

  private static EngineLoad engineLoad(double[] sums, int[] seen) {
    int kvSlot = seen[2] > 0 ? 2 : 3;
    double kv = seen[kvSlot] == 0 ? -1 : Math.min(1, sums[kvSlot] / seen[kvSlot]);
    return new EngineLoad((int) Math.min(Integer.MAX_VALUE, Math.round(sums[0])),
        (int) Math.min(Integer.MAX_VALUE, Math.round(sums[1])), kv);
  }

  /** The value of a sample line {@code name[{labels}] value [timestamp]}, or NaN if unreadable. */
  private static double sampleValue(String line, int nameEnd) {
    int from = nameEnd;
    if (line.charAt(nameEnd) == '{') {
      from = line.lastIndexOf('}');
      if (from < 0) {
        return Double.NaN;
      }
      from++;
    }
    String rest = line.substring(from).trim();
    int sp = rest.indexOf(' ');
    try {
      return Double.parseDouble(sp < 0 ? rest : rest.substring(0, sp));
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }

  /** {@code text} as a number, or NaN when it is not one (a malformed exposition). */
  private static double number(String text) {
    try {
      return Double.parseDouble(text);
    } catch (NumberFormatException e) {
      return Double.NaN;
    }
  }

  /** After {@code b} recovered: forgets its index view if its engine restarted (see the class doc). */
  private void checkRestart(Backend b) {
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
      String text = new String(r.body(), StandardCharsets.UTF_8);
      double started = parseStartSeconds(text);
      double known = b.engineStartSeconds();
      if (Double.isNaN(started) || Double.isNaN(known) || started != known) {
        backends.cacheLost(b);
        LOG.log(Level.INFO, "backend {0}: {1}; its index view is forgotten", b.id(),
            Double.isNaN(started) || Double.isNaN(known) ? "engine start time unknown after an outage" : "engine restarted");
      }
      b.engineStartSeconds(started);
      b.metricsRead(true);
      long tokens = parseCapacityTokens(text);
      if (tokens > 0 && tokens != b.capacityTokens()) {
        backends.capacityDiscovered(b, tokens);
      }
    });
  }

  /** {@code process_start_time_seconds} from a Prometheus text exposition, or NaN when absent. */
  static double parseStartSeconds(String metricsText) {
    Matcher m = PROCESS_START.matcher(metricsText);
    double v = m.find() ? number(m.group(1)) : Double.NaN;
    return v > 0 && !Double.isInfinite(v) ? v : Double.NaN;
  }

  /** Reads {@code b}'s capacity (unless configured) and its engine's start time, until both are read once. */
  private void discoverCapacity(Backend b) {
    if ((b.capacityKnown() && b.metricsRead()) || b.removed()) {
      return;
    }
    Duration timeout = config.timeout();
    control.get(b.config(), "/metrics", null, timeout).whenComplete((r, e) -> {
      if (e != null || !r.ok()) {
        return;
      }
      String text = new String(r.body(), StandardCharsets.UTF_8);
      if (!b.metricsRead()) {
        b.engineStartSeconds(parseStartSeconds(text));
        b.metricsRead(true);
      }
      long tokens = parseCapacityTokens(text);
      if (tokens > 0 && !b.capacityKnown()) {
        backends.capacityDiscovered(b, tokens);
        LOG.log(Level.INFO, "backend {0}: KV capacity {1} tokens (from /metrics)", b.id(), String.valueOf(tokens));
      }
    });
  }

  /** KV capacity in tokens from a Prometheus text exposition, or {@code -1} when absent. */
  static long parseCapacityTokens(String metricsText) {
    for (String line : metricsText.split("\n")) {
      if (line.startsWith("vllm:cache_config_info{")) {
        Matcher blocks = VLLM_BLOCKS.matcher(line);
        Matcher size = VLLM_BLOCK_SIZE.matcher(line);
        if (blocks.find() && size.find()) {
          return Long.parseLong(blocks.group(1)) * Long.parseLong(size.group(1));
        }
      }
    }
    Matcher m = SGLANG_TOKENS.matcher(metricsText);
    if (m.find()) {
      double v = number(m.group(1));
      return v >= 1 && !Double.isInfinite(v) ? (long) v : -1;
    }
    return -1;
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
