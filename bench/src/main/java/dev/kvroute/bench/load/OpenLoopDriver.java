package dev.kvroute.bench.load;

import dev.kvroute.bench.report.FiguresRecorder;
import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.bench.workload.ChatRequests;
import dev.kvroute.bench.workload.CompletionRequests;
import dev.kvroute.bench.workload.OpenLoopWorkload;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpHeaders;
import java.io.IOException;
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
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.atomic.LongAdder;

/**
 * Sends an {@link OpenLoopWorkload} to a router through real HTTP and measures what the client sees.
 *
 * <p>Arrivals are open-loop: request {@code i} is sent at its arrival time divided by the time scale
 * (wall seconds from the start), whatever earlier responses did. Its body ({@link
 * CompletionRequests#body}: token-id prompt, {@code max_tokens}, {@code ignore_eos}, streamed with
 * usage) is built ahead of time by a builder thread that stays at most 32 requests ahead of the
 * sender (or at send time if the builder is behind), so building it delays no send; its session key, if any, also goes in the {@value
 * ChatRequests#SESSION_HEADER} header. TTFT is measured from just before the request is written to the
 * first non-empty text chunk, times the time scale; later text chunks are not parsed (the reply is
 * not kept). Prompt and cached tokens come from the usage chunk;
 * a usage prompt count other than the prompt's length fails the request (the router or engine did not
 * take the token ids as given).
 *
 * <p>Thread-safe (stateless); each {@link #run} uses its own connections and threads.
 */
public final class OpenLoopDriver {
  private static final int ERROR_SAMPLES = 5;
  private static final int LOOK_AHEAD = 32;
  private static final byte[] EMPTY = new byte[0];

  private OpenLoopDriver() {}

  /**
   * Sends every request of {@code workload} to {@code settings.target()} and waits for the last one.
   *
   * @throws IOException if the model cannot be discovered from {@code /v1/models}
   * @throws InterruptedException if interrupted while waiting (the run's connections are closed)
   */
  public static LoadResult run(OpenLoopWorkload workload, LoadSettings settings, LoadProgress progress)
      throws IOException, InterruptedException {
    String model = settings.model() != null ? settings.model() : LoadDriver.discoverModel(settings.target());
    try (Run run = new Run(workload, settings, model, progress)) {
      return run.execute();
    }
  }

  /** One run's state. */
  private static final class Run implements AutoCloseable {
    final OpenLoopWorkload workload;
    final LoadSettings settings;
    final String model;
    final LoadProgress progress;
    final StreamingHttpClient client;
    final ScheduledExecutorService timers;
    final FiguresRecorder figures = new FiguresRecorder();
    final CountDownLatch left;
    final AtomicInteger inFlight = new AtomicInteger();
    final LongAdder errors = new LongAdder();
    final LongAdder cachedUnreported = new LongAdder();
    final List<String> errorSamples = Collections.synchronizedList(new ArrayList<>());
    final Map<String, LongAdder> perBackend = new ConcurrentHashMap<>();
    final AtomicLong maxLateNanos = new AtomicLong();
    final List<RequestRecord> records = Collections.synchronizedList(new ArrayList<>());
    /** Bodies built ahead of their send time by {@link #builder}; taken (set to null) when sent. */
    final AtomicReferenceArray<byte[]> bodies;
    /** Requests sent so far: the builder stays at most {@value #LOOK_AHEAD} requests ahead of it. */
    final AtomicInteger sent = new AtomicInteger();
    final Thread builder;
    long startNanos;

    Run(OpenLoopWorkload workload, LoadSettings settings, String model, LoadProgress progress) {
      this.workload = workload;
      this.settings = settings;
      this.model = model;
      this.progress = progress;
      this.client =
          new StreamingHttpClient(settings.target(), settings.ioThreads(), settings.requestTimeout().toNanos());
      this.timers =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "kvroute-open-loop-timer");
                t.setDaemon(true);
                return t;
              });
      this.left = new CountDownLatch(workload.size());
      this.bodies = new AtomicReferenceArray<>(workload.size());
      this.builder = new Thread(this::buildAhead, "kvroute-open-loop-bodies");
      this.builder.setDaemon(true);
    }

    /** Builds request bodies in order, at most {@value #LOOK_AHEAD} requests ahead of the sender. */
    private void buildAhead() {
      for (int i = 0; i < workload.size(); i++) {
        while (i - sent.get() >= LOOK_AHEAD) {
          LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
          if (Thread.currentThread().isInterrupted()) {
            return;
          }
        }
        bodies.compareAndSet(i, null, body(i));
      }
    }

    private byte[] body(int index) {
      return CompletionRequests.body(
          model, workload.sessionKey(index), workload.promptTokens(index), workload.maxTokens(index));
    }

    LoadResult execute() throws InterruptedException {
      builder.start();
      startNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
      for (int i = 0; i < workload.size(); i++) {
        int index = i;
        long due = startNanos + Math.round(workload.arrivalSeconds(i) / settings.timeScale() * 1e9);
        timers.schedule(
            () -> {
              maxLateNanos.accumulateAndGet(System.nanoTime() - due, Math::max);
              send(index);
            },
            Math.max(0, due - System.nanoTime()),
            TimeUnit.NANOSECONDS);
      }
      timers.scheduleAtFixedRate(this::report, 1, 1, TimeUnit.SECONDS);
      left.await();
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
          done);
    }

    private void report() {
      progress.update(
          figures.requests(), workload.size(), inFlight.get(), figures.meanTtftSeconds(), figures.ttftSecondsAt(90),
          figures.hitRate(), errors.sum());
    }

    private void send(int index) {
      sent.incrementAndGet();
      byte[] built = bodies.getAndSet(index, EMPTY);
      byte[] body = built != null ? built : body(index);
      int promptLength = workload.promptLength(index);
      String key = workload.sessionKey(index);
      Map<String, String> headers = key == null ? Map.of() : Map.of(ChatRequests.SESSION_HEADER, key);
      ChatStreamReader reader = new ChatStreamReader();
      inFlight.incrementAndGet();
      long sentNanos = System.nanoTime();
      client.post(
          "/v1/completions",
          headers,
          body,
          new StreamingHttpClient.ResponseListener() {
            final SseParser sse = new SseParser(this::onData);
            String backend;
            IOException bad;

            private void onData(String data) {
              if (bad != null || (reader.firstContentNanos() >= 0 && !needed(data))) {
                return;
              }
              try {
                reader.onData(data, System.nanoTime());
              } catch (IOException e) {
                bad = e;
              }
            }

            @Override
            public void onHeaders(int status, HttpHeaders h) {
              backend = h.get("x-kvroute-backend");
            }

            @Override
            public void onBody(ByteBuf chunk) {
              sse.feed(chunk);
            }

            @Override
            public void onEnd() {
              sse.finish();
              String problem =
                  bad != null ? "unreadable event: " + bad.getMessage()
                      : reader.error() != null ? "error event: " + reader.error()
                      : !reader.done() ? "stream ended without [DONE]"
                      : reader.firstContentNanos() < 0 ? "no content"
                      : reader.promptTokens() < 0 ? "no usage chunk (stream_options.include_usage ignored?)"
                      : reader.promptTokens() != promptLength
                          ? "usage.prompt_tokens " + reader.promptTokens() + " (expected: the prompt's "
                              + promptLength + " token ids)"
                      : null;
              if (problem != null) {
                failed(index, problem);
              } else {
                completed(index, reader, sentNanos, backend);
              }
            }

            @Override
            public void onError(Throwable cause) {
              failed(index, cause.getMessage());
            }
          });
    }

    /**
     * Whether an event after the first token must be parsed: the usage chunk, an error, or the end.
     * The other chunks each carry one token of text, which an open-loop client does not keep.
     */
    static boolean needed(String data) {
      return data.contains("\"usage\"") || data.contains("\"error\"") || data.startsWith("[DONE]");
    }

    private void completed(int index, ChatStreamReader r, long sentNanos, String backend) {
      int cached = r.cachedTokens();
      if (cached < 0) {
        cachedUnreported.increment();
        cached = 0;
      }
      cached = Math.min(cached, r.promptTokens());
      double ttft = (r.firstContentNanos() - sentNanos) / 1e9 * settings.timeScale();
      figures.record(r.promptTokens(), cached, ttft);
      records.add(
          new RequestRecord(
              index, 0, (sentNanos - startNanos) / 1e9 * settings.timeScale(), ttft, r.promptTokens(), cached,
              backend));
      if (backend != null) {
        perBackend.computeIfAbsent(backend, b -> new LongAdder()).increment();
      }
      done();
    }

    private void failed(int index, String message) {
      errors.increment();
      if (errorSamples.size() < ERROR_SAMPLES) {
        errorSamples.add("request " + index + ": " + message);
      }
      done();
    }

    private void done() {
      inFlight.decrementAndGet();
      left.countDown();
    }

    @Override
    public void close() {
      builder.interrupt();
      timers.shutdownNow();
      client.close();
    }
  }
}
