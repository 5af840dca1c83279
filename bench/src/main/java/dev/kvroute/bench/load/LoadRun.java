package dev.kvroute.bench.load;

import dev.kvroute.bench.report.FiguresRecorder;
import dev.kvroute.bench.report.RequestRecord;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.SynchronizedHistogram;

/**
 * What a load driver's run needs whatever its arrivals: the HTTP client, a timer thread that runs sends
 * at their wall times, the progress display, and the record of completed and failed requests that
 * becomes the {@link LoadResult}.
 *
 * <p>The run waits for units of work: sessions for the closed-loop {@link LoadDriver}, requests for the
 * {@link OpenLoopDriver}. A unit is active from {@link #began} to {@link #ended}; {@link #await} returns
 * when all have ended. Model seconds are wall seconds times the settings' time scale.
 *
 * <p>Thread-safe: requests are recorded from the client's event loops. {@link #start} is called once,
 * before anything is scheduled.
 */
final class LoadRun implements AutoCloseable {
  private static final int ERROR_SAMPLES = 5;

  final StreamingHttpClient client;
  /** One client per router replica ({@link LoadSettings#targets}); {@code client} is the first. */
  private final List<StreamingHttpClient> clients = new ArrayList<>();
  private final AtomicLong sends = new AtomicLong();
  /** One client per engine, for side traffic that bypasses the routers; empty without it. */
  private final List<StreamingHttpClient> directClients = new ArrayList<>();
  private final FiguresRecorder side = new FiguresRecorder();
  private final double timeScale;
  private final LoadProgress progress;
  private final long totalRequests;
  private final ScheduledExecutorService timers;
  private final CountDownLatch unitsLeft;
  private final AtomicInteger active = new AtomicInteger();
  private final FiguresRecorder figures = new FiguresRecorder();
  private final LongAdder errors = new LongAdder();
  private final LongAdder cachedUnreported = new LongAdder();
  private final List<String> errorSamples = Collections.synchronizedList(new ArrayList<>());
  private final Map<String, LongAdder> perBackend = new ConcurrentHashMap<>();
  private final AtomicLong maxLateNanos = new AtomicLong();
  /** How late each send ran against its schedule, wall microseconds (1 µs to 1 hour, 3 digits). */
  private final SynchronizedHistogram sendLateMicros = new SynchronizedHistogram(3_600_000_000L, 3);
  private final List<RequestRecord> records = Collections.synchronizedList(new ArrayList<>());
  private long startNanos;

  /**
   * @param timerThread the timer thread's name
   * @param units sessions or requests to wait for
   * @param totalRequests requests in the workload, for the progress display
   */
  LoadRun(LoadSettings settings, String timerThread, int units, long totalRequests, LoadProgress progress) {
    this(settings, timerThread, units, totalRequests, progress, List.of());
  }

  /**
   * As above, with a client per engine in {@code engines} for side traffic ({@link #direct}).
   */
  LoadRun(
      LoadSettings settings, String timerThread, int units, long totalRequests, LoadProgress progress,
      List<java.net.URI> engines) {
    for (java.net.URI e : engines) {
      directClients.add(new StreamingHttpClient(e, settings.ioThreads(), settings.requestTimeout().toNanos()));
    }
    this.timeScale = settings.timeScale();
    this.progress = progress;
    this.totalRequests = totalRequests;
    for (java.net.URI t : settings.targets()) {
      clients.add(new StreamingHttpClient(t, settings.ioThreads(), settings.requestTimeout().toNanos()));
    }
    this.client = clients.get(0);
    this.timers =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, timerThread);
              t.setDaemon(true);
              return t;
            });
    this.unitsLeft = new CountDownLatch(units);
  }

  /** Sets the run's start {@code leadMillis} from now and returns it ({@link System#nanoTime()} scale). */
  long start(long leadMillis) {
    startNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(leadMillis);
    return startNanos;
  }

  /**
   * Runs {@code task} on the timer thread at wall time {@code dueNanos} ({@link System#nanoTime()}
   * scale), or at once if that is past; how late it ran counts in {@link LoadResult#maxSendLateMillis}.
   */
  void at(long dueNanos, Runnable task) {
    long delay = dueNanos - System.nanoTime();
    timers.schedule(
        () -> {
          long late = System.nanoTime() - dueNanos;
          maxLateNanos.accumulateAndGet(late, Math::max);
          sendLateMicros.recordValue(Math.min(sendLateMicros.getHighestTrackableValue(), Math.max(0, late / 1000)));
          task.run();
        },
        Math.max(0, delay),
        TimeUnit.NANOSECONDS);
  }

  /**
   * The client of the next request, in send order: the router replicas in turn ({@link
   * LoadSettings#splitTargets}), or always {@link #client} for one router.
   */
  StreamingHttpClient nextClient() {
    return clients.size() == 1 ? client : clients.get((int) (sends.getAndIncrement() % clients.size()));
  }

  /**
   * The client of engine {@code engine}, for a side-traffic request sent straight to it (not counted
   * in the routers' round-robin split).
   *
   * @throws IndexOutOfBoundsException if the run was given no such engine
   */
  StreamingHttpClient direct(int engine) {
    return directClients.get(engine);
  }

  /** Records a completed side-traffic request: its usage in {@link LoadResult#side}, nothing else. */
  void completedSide(ChatStreamReader r, long sentNanos) {
    int cached = Math.max(0, Math.min(r.cachedTokens(), r.promptTokens()));
    side.record(r.promptTokens(), cached, (r.firstContentNanos() - sentNanos) / 1e9 * timeScale);
  }

  /** The wall nanoseconds that {@code modelSeconds} take. */
  long wallNanos(double modelSeconds) {
    return Math.round(modelSeconds / timeScale * 1e9);
  }

  /** A session or request began: active until {@link #ended}. */
  void began() {
    active.incrementAndGet();
  }

  /** A session or request ended, completed or failed. */
  void ended() {
    active.decrementAndGet();
    unitsLeft.countDown();
  }

  /**
   * Records a completed request: its usage tokens (cached tokens clamped to the prompt, 0 and counted in
   * {@link LoadResult#cachedUnreported} when not reported), its TTFT from {@code sentNanos} to the first
   * content in model seconds, and its backend.
   *
   * @param session the session's index (the request's, open-loop)
   * @param turn the turn's index within the session (0, open-loop)
   * @param sentNanos wall time just before the request was written
   * @param backend the {@code x-kvroute-backend} response header, or {@code null}
   */
  void completed(int session, int turn, ChatStreamReader r, long sentNanos, String backend) {
    int cached = r.cachedTokens();
    if (cached < 0) {
      cachedUnreported.increment();
      cached = 0;
    }
    cached = Math.min(cached, r.promptTokens());
    double ttftModelSeconds = (r.firstContentNanos() - sentNanos) / 1e9 * timeScale;
    figures.record(r.promptTokens(), cached, ttftModelSeconds);
    records.add(
        new RequestRecord(
            session, turn, (sentNanos - startNanos) / 1e9 * timeScale, ttftModelSeconds, r.promptTokens(), cached,
            backend));
    if (backend != null) {
      perBackend.computeIfAbsent(backend, b -> new LongAdder()).increment();
    }
  }

  /** Counts a failed request and keeps its message among the first few; {@code request} names it. */
  void failed(String request, String message) {
    errors.increment();
    if (errorSamples.size() < ERROR_SAMPLES) {
      errorSamples.add(request + ": " + message);
    }
  }

  /**
   * Reports progress every second until every unit ended, then returns what the run measured.
   *
   * @throws InterruptedException if interrupted while waiting
   */
  LoadResult await() throws InterruptedException {
    timers.scheduleAtFixedRate(this::report, 1, 1, TimeUnit.SECONDS);
    unitsLeft.await();
    double wall = (System.nanoTime() - startNanos) / 1e9;
    report();
    Map<String, Long> backends = new TreeMap<>();
    perBackend.forEach((k, v) -> backends.put(k, v.sum()));
    List<RequestRecord> done;
    synchronized (records) {
      done = new ArrayList<>(records);
    }
    return new LoadResult(
        figures, errors.sum(), errorSamples, cachedUnreported.sum(), backends, wall, maxLateNanos.get() / 1e6,
        sendLateMicros.getValueAtPercentile(99) / 1e3, done, side);
  }

  private void report() {
    progress.update(
        figures.requests(), totalRequests, active.get(), figures.meanTtftSeconds(), figures.ttftSecondsAt(90),
        figures.hitRate(), errors.sum());
  }

  @Override
  public void close() {
    timers.shutdownNow();
    for (StreamingHttpClient c : clients) {
      c.close();
    }
    for (StreamingHttpClient c : directClients) {
      c.close();
    }
  }
}
