package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.EngineLoad;
import dev.kvroute.proxy.config.BackendConfig;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A backend as the proxy tracks it: its configuration, health (from active checks), circuit
 * breaker, and the KV capacity the prefix index was given for it.
 *
 * <p>Thread-safe: health is written by the health checker's thread and read by every event loop
 * (volatile fields); the breaker synchronizes itself.
 */
final class Backend {
  private final BackendId id;
  private final BackendConfig config;
  private final CircuitBreaker breaker;
  private volatile boolean healthy = true;
  private volatile double engineStartSeconds = Double.NaN;
  private volatile boolean metricsRead;
  private final AtomicBoolean loadScrapeRunning = new AtomicBoolean();
  private final AtomicBoolean earlierStartWarned = new AtomicBoolean();
  private final AtomicInteger failedLoadScrapes = new AtomicInteger();
  private volatile boolean removed;
  private volatile boolean draining;
  private volatile ServedModels models = ServedModels.UNKNOWN;
  private volatile LoraAffinity.State lora = LoraAffinity.State.UNKNOWN;
  private volatile long capacityTokens;
  private volatile EngineLoad engineLoad;
  private volatile int fullBatch;
  private volatile boolean capacityKnown;
  private int consecutiveProbeFailures;
  private int consecutiveProbeSuccesses;

  Backend(BackendConfig config, CircuitBreaker breaker, long initialCapacityTokens) {
    this.id = BackendId.of(config.name());
    this.config = config;
    this.breaker = breaker;
    this.capacityTokens = initialCapacityTokens;
    this.capacityKnown = config.capacityTokens() > 0;
  }

  BackendId id() {
    return id;
  }

  BackendConfig config() {
    return config;
  }

  CircuitBreaker breaker() {
    return breaker;
  }

  /** Healthy by its active checks (always true when checks are disabled). */
  boolean healthy() {
    return healthy;
  }

  /**
   * Whether requests may be routed here now: healthy, not removed, not draining, and the circuit
   * admits it.
   */
  boolean routable() {
    return healthy && !removed && !draining && breaker.allowsRequest();
  }

  /**
   * Whether the backend is draining: it takes no new request, while the requests in flight on it
   * finish (a Kubernetes pod that turned not ready or is terminating).
   */
  boolean draining() {
    return draining;
  }

  void draining(boolean draining) {
    this.draining = draining;
  }

  /** The engine's last load report, or {@code null} when none is current (never read, or the scrape failed). */
  EngineLoad engineLoad() {
    return engineLoad;
  }

  void engineLoad(EngineLoad load) {
    engineLoad = load;
    if (load != null && load.waiting() > 0 && load.running() > 0) {
      fullBatch = load.running();
    }
  }

  /**
   * The requests the engine ran the last time it also had requests waiting (its batch was full:
   * vLLM's {@code max_num_seqs}, or fewer when KV-bound), or 0 if it never reported a full batch.
   */
  int fullBatch() {
    return fullBatch;
  }

  /**
   * Whether the backend is busy rather than broken: its health probe passes and its engine's last
   * report shows requests waiting. A first-byte timeout on a busy backend is overload and does not
   * count against its circuit.
   */
  boolean busy() {
    EngineLoad l = engineLoad;
    return healthy && !removed && l != null && l.waiting() > 0;
  }

  boolean removed() {
    return removed;
  }

  /** The models and adapters it serves ({@link ServedModels#UNKNOWN} until configured or read). */
  ServedModels models() {
    return models;
  }

  void models(ServedModels served) {
    models = served;
  }

  /** Its engine's LoRA adapters running and waiting, from {@code vllm:lora_requests_info}. */
  LoraAffinity.State lora() {
    return lora;
  }

  void lora(LoraAffinity.State state) {
    lora = state;
  }

  void markRemoved() {
    removed = true;
  }

  long capacityTokens() {
    return capacityTokens;
  }

  /** Whether the capacity was configured or read from the engine (not the default). */
  boolean capacityKnown() {
    return capacityKnown;
  }

  /**
   * The latest {@code process_start_time_seconds} the engine reported (an earlier one read later is
   * not a restart and does not replace it), or NaN if never read.
   */
  double engineStartSeconds() {
    return engineStartSeconds;
  }

  void engineStartSeconds(double seconds) {
    engineStartSeconds = seconds;
  }

  /** Marks an engine-load scrape as started; {@code false} if the last one has not ended. */
  boolean startLoadScrape() {
    return loadScrapeRunning.compareAndSet(false, true);
  }

  void endLoadScrape() {
    loadScrapeRunning.set(false);
  }

  /** Counts a failed load scrape; returns the consecutive failures so far. */
  int loadScrapeFailed() {
    return failedLoadScrapes.incrementAndGet();
  }

  /** Resets the failed load scrapes; returns how many there were. */
  int loadScrapeSucceeded() {
    return failedLoadScrapes.getAndSet(0);
  }

  /**
   * Whether this is the first time the engine reported a start time earlier than the latest one seen
   * (the URL reaches several engines, e.g. a load balancer); {@code true} once.
   */
  boolean firstEarlierStartTime() {
    return !earlierStartWarned.getAndSet(true);
  }

  /** Whether the engine's {@code /metrics} has been read since it was added (or last unreadable). */
  boolean metricsRead() {
    return metricsRead;
  }

  void metricsRead(boolean read) {
    metricsRead = read;
  }

  void capacityDiscovered(long tokens) {
    capacityTokens = tokens;
    capacityKnown = true;
  }

  /**
   * Records one probe result and returns whether the health state changed. Called only from the
   * health checker's event loop.
   */
  boolean probed(boolean ok, int healthyThreshold, int unhealthyThreshold) {
    if (ok) {
      consecutiveProbeFailures = 0;
      consecutiveProbeSuccesses++;
      if (!healthy && consecutiveProbeSuccesses >= healthyThreshold) {
        healthy = true;
        return true;
      }
    } else {
      consecutiveProbeSuccesses = 0;
      consecutiveProbeFailures++;
      if (healthy && consecutiveProbeFailures >= unhealthyThreshold) {
        healthy = false;
        return true;
      }
    }
    return false;
  }

  @Override
  public String toString() {
    return id.name();
  }
}
