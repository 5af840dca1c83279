package dev.kvroute.bench.load;

import dev.kvroute.bench.workload.ChatRequests;
import dev.kvroute.bench.workload.CompletionRequests;
import dev.kvroute.bench.workload.OpenLoopWorkload;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;

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

  /** One run's requests. */
  private static final class Run implements AutoCloseable {
    final OpenLoopWorkload workload;
    final String model;
    final LoadRun run;
    /** Bodies built ahead of their send time by {@link #builder}; taken (set to null) when sent. */
    final AtomicReferenceArray<byte[]> bodies;
    /** Requests sent so far: the builder stays at most {@value #LOOK_AHEAD} requests ahead of it. */
    final AtomicInteger sent = new AtomicInteger();
    final Thread builder;

    Run(OpenLoopWorkload workload, LoadSettings settings, String model, LoadProgress progress) {
      this.workload = workload;
      this.model = model;
      this.run = new LoadRun(settings, "kvroute-open-loop-timer", workload.size(), workload.size(), progress);
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
      long startNanos = run.start(200);
      for (int i = 0; i < workload.size(); i++) {
        int index = i;
        run.at(startNanos + run.wallNanos(workload.arrivalSeconds(i)), () -> send(index));
      }
      return run.await();
    }

    private void send(int index) {
      sent.incrementAndGet();
      byte[] built = bodies.getAndSet(index, EMPTY);
      byte[] body = built != null ? built : body(index);
      int promptLength = workload.promptLength(index);
      String key = workload.sessionKey(index);
      Map<String, String> headers = key == null ? Map.of() : Map.of(ChatRequests.SESSION_HEADER, key);
      run.began();
      StreamedReply.post(
          run.nextClient(),
          "/v1/completions",
          headers,
          body,
          false,
          new StreamedReply.Outcome() {
            @Override
            public void completed(ChatStreamReader reader, long sentNanos, String backend) {
              if (reader.promptTokens() != promptLength) {
                failed(
                    "usage.prompt_tokens " + reader.promptTokens() + " (expected: the prompt's " + promptLength
                        + " token ids)");
              } else {
                run.completed(index, 0, reader, sentNanos, backend);
                run.ended();
              }
            }

            @Override
            public void failed(String problem) {
              run.failed("request " + index, problem);
              run.ended();
            }
          });
    }

    @Override
    public void close() {
      builder.interrupt();
      run.close();
    }
  }
}
