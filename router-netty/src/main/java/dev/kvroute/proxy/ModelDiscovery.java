package dev.kvroute.proxy;

import dev.kvroute.proxy.config.ModelsConfig;
import io.netty.channel.EventLoop;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Learns which models and LoRA adapters each backend serves, from its {@code GET /v1/models} (vLLM
 * lists each adapter as a card whose {@code parent} is the base model; SGLang lists its served model),
 * or, when that path is missing (404), SGLang's {@code GET /get_model_info}. A backend configured with
 * {@code models=...} is never asked: its list overrides discovery.
 *
 * <p>When: at once when a backend is added, every {@code models.refreshInterval} (default 30s), after
 * a backend recovers from an outage or its engine restarted (the health checker calls {@link #refresh}),
 * and after an adapter is loaded or unloaded through the admin API. A read that fails (no answer, an
 * error status, a body that is not a model list) keeps what was known before; a backend never read
 * stays {@link ServedModels#UNKNOWN} and may be sent any model.
 *
 * <p>Logging: a change of what a backend serves at INFO. A backend whose models cannot be read while
 * nothing is known of them gets one INFO line per reason (a dead backend is asked every health-check
 * interval: the repeats are DEBUG, and so is a reason seen before, e.g. a backend alternating between
 * 500 and 503; at most 8 reasons per backend); the reason never quotes the backend's body. Once a
 * read succeeds the next failure is reported again. A failure that keeps a known view is DEBUG.
 *
 * <p>Thread-safe: results are applied from the control client's threads to a volatile field of the
 * backend; a change is logged once.
 */
final class ModelDiscovery implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ModelDiscovery.class.getName());

  private final ModelsConfig config;
  private final BackendRegistry backends;
  private final ControlClient control;
  private final EventLoop loop;
  private final Duration timeout;
  private final Duration retryInterval;
  private ScheduledFuture<?> task;
  private ScheduledFuture<?> retryTask;
  /** The latest read of each backend not yet applied. */
  private final java.util.Map<dev.kvroute.core.BackendId, CompletableFuture<Void>> pending =
      new java.util.concurrent.ConcurrentHashMap<>();
  /**
   * The reasons logged at INFO for each backend whose models cannot be read yet (at most
   * {@link #REASONS_KEPT}, so a backend alternating between two failures is not logged every time).
   */
  private final java.util.Map<dev.kvroute.core.BackendId, java.util.Set<String>> reported =
      new java.util.concurrent.ConcurrentHashMap<>();
  private static final int REASONS_KEPT = 8;
  /**
   * Least time between two reads of every backend that a request for an unknown model starts
   * ({@link #unknownModelRequested}): a model loaded on an engine directly (its own
   * {@code /v1/load_lora_adapter}) is routed from about then on, not from the next periodic refresh.
   */
  static final Duration UNKNOWN_MODEL_REREAD = Duration.ofSeconds(2);
  /** When the last read for an unknown model started ({@link System#nanoTime}), or 0 for none. */
  private final java.util.concurrent.atomic.AtomicLong unknownReread = new java.util.concurrent.atomic.AtomicLong();

  /**
   * @param timeout how long one read may take (the health check's timeout)
   * @param retryInterval how often a backend whose models are still unknown is asked again (the
   *     health-check interval)
   */
  ModelDiscovery(ModelsConfig config, BackendRegistry backends, ControlClient control, EventLoop loop, Duration timeout,
      Duration retryInterval) {
    this.config = config;
    this.backends = backends;
    this.control = control;
    this.loop = loop;
    this.timeout = timeout;
    this.retryInterval = retryInterval;
  }

  /** Starts the periodic refresh (when enabled) and the retries of backends not read yet. */
  void start() {
    if (config.refreshEnabled()) {
      long every = config.refreshInterval().toNanos();
      task = loop.scheduleAtFixedRate(this::refreshAll, every, every, TimeUnit.NANOSECONDS);
    }
    long retry = retryInterval.toNanos();
    retryTask = loop.scheduleAtFixedRate(this::retryUnknown, retry, retry, TimeUnit.NANOSECONDS);
  }

  /** Asks again every backend whose models are unknown and not being read. */
  private void retryUnknown() {
    reported.keySet().removeIf(id -> backends.get(id) == null);
    for (Backend b : backends.all()) {
      if (!b.models().known() && !pending.containsKey(b.id())) {
        try {
          refresh(b);
        } catch (RuntimeException e) {
          LOG.log(Level.WARNING, "backend " + b.id() + ": model discovery failed to start: " + e);
        }
      }
    }
  }

  /**
   * A request named a model no backend lists: reads every backend's models again, at most once per
   * {@link #UNKNOWN_MODEL_REREAD} and only while the periodic refresh is on (a client sending unknown
   * names costs the engines one {@code GET /v1/models} each per interval, not one per request). The
   * request itself is answered 404 as before; later ones see the read.
   */
  void unknownModelRequested() {
    if (!config.refreshEnabled()) {
      return;
    }
    long now = System.nanoTime();
    long last = unknownReread.get();
    if ((last == 0 || now - last >= UNKNOWN_MODEL_REREAD.toNanos()) && unknownReread.compareAndSet(last, now)) {
      loop.execute(this::refreshAll);
    }
  }

  private void refreshAll() {
    for (Backend b : backends.all()) {
      try {
        refresh(b);
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "backend " + b.id() + ": model discovery failed to start: " + e);
      }
    }
  }

  /**
   * Reads {@code b}'s served models now (its configured list when it has one). The future completes
   * (never exceptionally) once the backend's view is updated, or kept after a failed read.
   */
  CompletableFuture<Void> refresh(Backend b) {
    if (!b.config().models().isEmpty()) {
      apply(b, ServedModels.configured(b.config().models()));
      return CompletableFuture.completedFuture(null);
    }
    if (b.removed()) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Void> read = read(b);
    pending.put(b.id(), read);
    read.whenComplete((x, e) -> pending.remove(b.id(), read));
    return read;
  }

  /**
   * Waits until the reads started so far are applied, or {@code timeout} passes (a backend that does
   * not answer stays as it was: unknown for a new one).
   */
  void awaitPending(Duration timeout) {
    try {
      CompletableFuture.allOf(pending.values().toArray(CompletableFuture[]::new))
          .get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
      LOG.log(Level.INFO, "not every backend's models were read within " + timeout.toMillis() + " ms; those are"
          + " sent any model until they are");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private CompletableFuture<Void> read(Backend b) {
    return control.get(b.config(), "/v1/models", null, timeout).thenCompose(r -> {
      if (r.status() == 404) {
        return control.get(b.config(), "/get_model_info", null, timeout).thenApply(info -> {
          if (!info.ok()) {
            throw new IllegalStateException("/v1/models and /get_model_info answered 404 and " + info.status());
          }
          try {
            return ServedModels.parseSglangModelInfo(info.body());
          } catch (IOException e) {
            throw new IllegalStateException("/get_model_info: " + withoutBody(e));
          }
        });
      }
      if (!r.ok()) {
        throw new IllegalStateException("/v1/models answered " + r.status());
      }
      try {
        return CompletableFuture.completedFuture(ServedModels.parseModelList(r.body()));
      } catch (IOException e) {
        throw new IllegalStateException("/v1/models: not a model list (" + withoutBody(e) + ")");
      }
    }).handle((served, e) -> {
      if (e != null) {
        // INFO while nothing is known (it is then sent any model), once per reason; a stale view is
        // kept quietly
        Throwable cause = e.getCause() != null ? e.getCause() : e;
        String reason = cause.getMessage() != null ? cause.getMessage() : cause.toString();
        boolean tell = !b.models().known() && told(b, reason);
        LOG.log(tell ? Level.INFO : Level.DEBUG, "backend " + b.id() + ": cannot read its models yet ("
            + reason + ")" + (tell ? "; asked again every " + retryInterval.toMillis() + " ms, logged again"
            + " for a new reason" : ""));
      } else {
        reported.remove(b.id());
        apply(b, served);
      }
      return null;
    });
  }

  /** Whether {@code reason} is new for {@code b} (and remembers it); reads run one at a time per backend. */
  private boolean told(Backend b, String reason) {
    java.util.Set<String> seen = reported.computeIfAbsent(b.id(), id -> new java.util.LinkedHashSet<>());
    synchronized (seen) {
      if (seen.contains(reason) || seen.size() >= REASONS_KEPT) {
        return false;
      }
      return seen.add(reason);
    }
  }

  /**
   * A parse failure's reason without the body's text: Jackson quotes the start of what it could not
   * read, which would put whatever a broken backend answered (tokens, keys, request ids) into the
   * log, and make every read's reason differ.
   */
  private static String withoutBody(IOException e) {
    return e instanceof com.fasterxml.jackson.core.JsonProcessingException ? "not JSON" : e.getMessage();
  }

  private void apply(Backend b, ServedModels served) {
    ServedModels before = b.models();
    if (b.removed() || before.equals(served)) {
      return;
    }
    b.models(served);
    LOG.log(Level.INFO, "backend {0} serves {1} ({2})", b.id(), served.cards().keySet(), served.source());
  }

  @Override
  public void close() {
    if (task != null) {
      task.cancel(false);
    }
    if (retryTask != null) {
      retryTask.cancel(false);
    }
  }
}
