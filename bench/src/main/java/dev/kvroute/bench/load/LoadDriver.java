package dev.kvroute.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.bench.workload.ChatRequests;
import dev.kvroute.bench.workload.Conversation;
import dev.kvroute.bench.workload.Session;
import dev.kvroute.bench.workload.SideTraffic;
import dev.kvroute.bench.workload.Turn;
import dev.kvroute.bench.workload.Workload;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.IntFunction;

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
    return run(workload, settings, progress, session -> model);
  }

  /**
   * As {@link #run(Workload, LoadSettings, LoadProgress)}, with each session's {@code model} field
   * given by {@code sessionModel} (a session's index to the model or LoRA adapter its requests name;
   * the multi-model workload), whatever {@code settings.model()} says.
   *
   * @throws InterruptedException if interrupted while waiting (the run's connections are closed)
   */
  public static LoadResult run(
      Workload workload, LoadSettings settings, LoadProgress progress, IntFunction<String> sessionModel)
      throws InterruptedException {
    try (Run run = new Run(workload, settings, sessionModel, progress)) {
      return run.execute();
    }
  }

  /**
   * Runs {@code traffic}'s workload: its routed sessions through {@code settings}' routers, its side
   * sessions straight to their engine in {@code engines} (fleet order), which no router sees. The
   * figures and records are the routed sessions'; the side traffic's are {@link LoadResult#side}.
   *
   * @throws IOException if the model cannot be discovered from {@code /v1/models}
   * @throws InterruptedException if interrupted while waiting (the run's connections are closed)
   */
  public static LoadResult run(SideTraffic traffic, LoadSettings settings, List<URI> engines, LoadProgress progress)
      throws IOException, InterruptedException {
    if (traffic.sideSessions() > 0 && engines.size() != traffic.workload().fleet().replicas()) {
      throw new IllegalArgumentException(
          "engines: " + engines.size() + " (expected: the fleet's " + traffic.workload().fleet().replicas() + ")");
    }
    String model = settings.model() != null ? settings.model() : discoverModel(settings.target());
    try (Run run = new Run(traffic.workload(), settings, session -> model, progress, traffic, engines)) {
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

  /** One run's sessions. */
  private static final class Run implements AutoCloseable {
    final Workload workload;
    final IntFunction<String> model;
    final LoadRun run;

    /** Which sessions bypass the routers, or null (all routed). */
    final SideTraffic side;

    /** Builds next turns' bodies off the client's event loops and the timer thread. */
    final ExecutorService bodies =
        Executors.newSingleThreadExecutor(r -> {
          Thread t = new Thread(r, "kvroute-load-bodies");
          t.setDaemon(true);
          return t;
        });

    Run(Workload workload, LoadSettings settings, IntFunction<String> model, LoadProgress progress) {
      this(workload, settings, model, progress, null, List.of());
    }

    Run(
        Workload workload, LoadSettings settings, IntFunction<String> model, LoadProgress progress, SideTraffic side,
        List<URI> engines) {
      this.workload = workload;
      this.model = model;
      this.side = side;
      this.run =
          new LoadRun(
              settings, "kvroute-load-timer", workload.sessions().size(),
              side == null ? workload.requests() : side.routedRequests(), progress, engines);
    }

    LoadResult execute() throws InterruptedException {
      List<Conversation> conversations = new ArrayList<>();
      List<byte[]> firstBodies = new ArrayList<>();
      for (Session s : workload.sessions()) {
        Conversation c = new Conversation(s);
        conversations.add(c);
        firstBodies.add(body(c));
      }
      long startNanos = run.start(50);
      for (int i = 0; i < conversations.size(); i++) {
        Conversation c = conversations.get(i);
        Session s = c.session();
        byte[] body = firstBodies.get(i);
        run.at(startNanos + run.wallNanos(s.startSeconds()), () -> {
          run.began();
          send(c, body);
        });
      }
      return run.await();
    }

    /**
     * The current turn's request body. Built before the turn is due (the first turns before the run
     * starts, a next turn on its own thread when the previous reply ends), so the timer thread only
     * posts: a body holds a session's whole history (up to ~70 KB of JSON), and building the seed
     * workload's 128 first turns in its 2-wall-second start window on the timer thread queued later
     * sends behind earlier ones whenever the CPU was busy (the precise run's send lag, docs/results.md).
     */
    private byte[] body(Conversation c) {
      Session s = c.session();
      Turn turn = c.currentTurn();
      return ChatRequests.body(
          model.apply(s.index()), s.key(), c.nextRequest(), turn.replyTokens(), s.requestSeed(c.turn()));
    }

    private void send(Conversation c, byte[] body) {
      Session s = c.session();
      int direct = side == null ? -1 : side.engineOf(s.index());
      StreamedReply.post(
          direct >= 0 ? run.direct(direct) : run.nextClient(),
          "/v1/chat/completions",
          Map.of(ChatRequests.SESSION_HEADER, s.key()),
          body,
          true,
          new StreamedReply.Outcome() {
            @Override
            public void completed(ChatStreamReader reader, long sentNanos, String backend) {
              Run.this.completed(c, reader, sentNanos, backend);
            }

            @Override
            public void failed(String problem) {
              Run.this.failed(c, problem);
            }
          });
    }

    private void completed(Conversation c, ChatStreamReader r, long sentNanos, String backend) {
      if (side != null && !side.routed(c.session().index())) {
        run.completedSide(r, sentNanos);
      } else {
        run.completed(c.session().index(), c.turn(), r, sentNanos, backend);
      }
      double think = c.currentTurn().thinkSeconds();
      c.reply(r.text());
      if (c.done()) {
        run.ended();
      } else {
        long due = System.nanoTime() + run.wallNanos(think);
        bodies.execute(() -> {
          byte[] body = body(c);
          run.at(due, () -> send(c, body));
        });
      }
    }

    private void failed(Conversation c, String message) {
      run.failed(c.session().key() + " turn " + c.turn(), message);
      run.ended();
    }

    @Override
    public void close() {
      bodies.shutdownNow();
      run.close();
    }
  }
}
