package dev.kvroute.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.bench.report.FiguresRecorder;
import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.bench.workload.ChatRequests;
import dev.kvroute.bench.workload.Conversation;
import dev.kvroute.bench.workload.Session;
import dev.kvroute.bench.workload.Turn;
import dev.kvroute.bench.workload.Workload;
import io.netty.buffer.ByteBuf;
import io.netty.handler.codec.http.HttpHeaders;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Sends a workload's sessions to a router through real HTTP and measures what the client sees.
 *
 * <p>Arrivals: session starts are open-loop (each at its start time divided by the time scale,
 * whatever the responses do); within a session the turns are closed-loop, as the workload defines
 * them: a turn is sent its think time (divided by the time scale) after the previous reply's last
 * byte arrived, so a slow reply delays the rest of its session, as it would for a person.
 *
 * <p>Each turn is a streaming chat completion ({@link ChatRequests#body}) with the session key in the
 * {@value ChatRequests#SESSION_HEADER} header. TTFT is measured by the client from just before the
 * request is written to the arrival of the first content delta, times the time scale. Prompt and
 * cached tokens come from the usage chunk. The reply text (the content deltas) is appended to the
 * session's history for the next turn.
 *
 * <p>Thread-safe (stateless); each {@link #run} uses its own connections and threads.
 */
public final class LoadDriver {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final int ERROR_SAMPLES = 5;

  private LoadDriver() {}

  /**
   * Runs every session of {@code workload} against {@code settings.target()} and waits for the end.
   *
   * @throws IOException if the model cannot be discovered from {@code /v1/models}
   * @throws InterruptedException if interrupted while waiting (the run's connections are closed)
   */
  public static LoadResult run(Workload workload, LoadSettings settings, LoadProgress progress)
      throws IOException, InterruptedException {
    String model = settings.model() != null ? settings.model() : discoverModel(settings.target());
    try (Run run = new Run(workload, settings, model, progress)) {
      return run.execute();
    }
  }

  /** The first model id the server's {@code GET /v1/models} lists. */
  static String discoverModel(URI target) throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    HttpResponse<String> res =
        http.send(
            HttpRequest.newBuilder(target.resolve("/v1/models")).timeout(Duration.ofSeconds(30)).GET().build(),
            HttpResponse.BodyHandlers.ofString());
    if (res.statusCode() != 200) {
      throw new IOException("GET " + target.resolve("/v1/models") + ": HTTP " + res.statusCode() + ": " + res.body());
    }
    JsonNode data = JSON.readTree(res.body()).path("data");
    if (!data.isArray() || data.isEmpty()) {
      throw new IOException("GET " + target.resolve("/v1/models") + " lists no model: " + res.body());
    }
    return data.get(0).path("id").asText();
  }

  /** One run's state. */
  private static final class Run implements AutoCloseable {
    final Workload workload;
    final LoadSettings settings;
    final String model;
    final LoadProgress progress;
    final StreamingHttpClient client;
    final ScheduledExecutorService timers;
    final FiguresRecorder figures = new FiguresRecorder();
    final CountDownLatch sessionsLeft;
    final AtomicInteger active = new AtomicInteger();
    final LongAdder errors = new LongAdder();
    final LongAdder cachedUnreported = new LongAdder();
    final List<String> errorSamples = Collections.synchronizedList(new ArrayList<>());
    final Map<String, LongAdder> perBackend = new ConcurrentHashMap<>();
    final AtomicLong maxLateNanos = new AtomicLong();
    final List<RequestRecord> records = Collections.synchronizedList(new ArrayList<>());
    final long total;
    long startNanos;

    Run(Workload workload, LoadSettings settings, String model, LoadProgress progress) {
      this.workload = workload;
      this.settings = settings;
      this.model = model;
      this.progress = progress;
      this.client =
          new StreamingHttpClient(settings.target(), settings.ioThreads(), settings.requestTimeout().toNanos());
      this.timers =
          Executors.newSingleThreadScheduledExecutor(
              r -> {
                Thread t = new Thread(r, "kvroute-load-timer");
                t.setDaemon(true);
                return t;
              });
      this.sessionsLeft = new CountDownLatch(workload.sessions().size());
      this.total = workload.requests();
    }

    LoadResult execute() throws InterruptedException {
      startNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50);
      for (Session s : workload.sessions()) {
        Conversation c = new Conversation(s);
        at(startNanos + wallNanos(s.startSeconds()), () -> {
          active.incrementAndGet();
          send(c);
        });
      }
      timers.scheduleAtFixedRate(this::report, 1, 1, TimeUnit.SECONDS);
      sessionsLeft.await();
      double wall = (System.nanoTime() - startNanos) / 1e9;
      report();
      Map<String, Long> backends = new java.util.TreeMap<>();
      perBackend.forEach((k, v) -> backends.put(k, v.sum()));
      return new LoadResult(
          figures, errors.sum(), errorSamples, cachedUnreported.sum(), backends, wall, maxLateNanos.get() / 1e6,
          records);
    }

    private void report() {
      progress.update(
          figures.requests(), total, active.get(), figures.meanTtftSeconds(), figures.ttftSecondsAt(90),
          figures.hitRate(), errors.sum());
    }

    /** Runs {@code task} at wall time {@code dueNanos} ({@link System#nanoTime()} scale). */
    private void at(long dueNanos, Runnable task) {
      long delay = dueNanos - System.nanoTime();
      timers.schedule(
          () -> {
            long late = System.nanoTime() - dueNanos;
            maxLateNanos.accumulateAndGet(late, Math::max);
            task.run();
          },
          Math.max(0, delay),
          TimeUnit.NANOSECONDS);
    }

    private long wallNanos(double modelSeconds) {
      return Math.round(modelSeconds / settings.timeScale() * 1e9);
    }

    private void send(Conversation c) {
      Session s = c.session();
      Turn turn = c.currentTurn();
      byte[] body =
          ChatRequests.body(model, s.key(), c.nextRequest(), turn.replyTokens(), s.requestSeed(c.turn()));
      ChatStreamReader reader = new ChatStreamReader();
      long sentNanos = System.nanoTime();
      client.post(
          "/v1/chat/completions",
          Map.of(ChatRequests.SESSION_HEADER, s.key()),
          body,
          new StreamingHttpClient.ResponseListener() {
            final SseParser sse = new SseParser(data -> onData(data));
            String backend;
            IOException bad;

            private void onData(String data) {
              if (bad != null) {
                return;
              }
              try {
                reader.onData(data, System.nanoTime());
              } catch (IOException e) {
                bad = e;
              }
            }

            @Override
            public void onHeaders(int status, HttpHeaders headers) {
              backend = headers.get("x-kvroute-backend");
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
                      : null;
              if (problem != null) {
                failed(c, problem);
                return;
              }
              completed(c, reader, sentNanos, backend);
            }

            @Override
            public void onError(Throwable cause) {
              failed(c, cause.getMessage());
            }
          });
    }

    private void completed(Conversation c, ChatStreamReader r, long sentNanos, String backend) {
      int cached = r.cachedTokens();
      if (cached < 0) {
        cachedUnreported.increment();
        cached = 0;
      }
      double ttftModelSeconds = (r.firstContentNanos() - sentNanos) / 1e9 * settings.timeScale();
      figures.record(r.promptTokens(), Math.min(cached, r.promptTokens()), ttftModelSeconds);
      records.add(
          new RequestRecord(
              c.session().index(), c.turn(), (sentNanos - startNanos) / 1e9 * settings.timeScale(),
              ttftModelSeconds, r.promptTokens(), Math.min(cached, r.promptTokens()), backend));
      if (backend != null) {
        perBackend.computeIfAbsent(backend, b -> new LongAdder()).increment();
      }
      double think = c.currentTurn().thinkSeconds();
      c.reply(r.text());
      if (c.done()) {
        sessionDone();
      } else {
        at(System.nanoTime() + wallNanos(think), () -> send(c));
      }
    }

    private void failed(Conversation c, String message) {
      errors.increment();
      if (errorSamples.size() < ERROR_SAMPLES) {
        errorSamples.add(c.session().key() + " turn " + c.turn() + ": " + message);
      }
      sessionDone();
    }

    private void sessionDone() {
      active.decrementAndGet();
      sessionsLeft.countDown();
    }

    @Override
    public void close() {
      timers.shutdownNow();
      client.close();
    }
  }
}
