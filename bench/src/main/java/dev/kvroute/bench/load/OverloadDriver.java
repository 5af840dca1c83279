package dev.kvroute.bench.load;

import dev.kvroute.bench.report.OverloadFigures;
import dev.kvroute.bench.workload.CompletionRequests;
import dev.kvroute.bench.workload.OverloadWorkload;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Sends an {@link OverloadWorkload} to a router through real HTTP, open-loop, and records what each
 * client saw: a complete stream (TTFT from just before the request was written to its first content,
 * times the time scale: model seconds), a 429 or a 503 (each must carry {@code Retry-After} and a JSON
 * error body, else the request counts as failed), or anything else (failed).
 *
 * <p>Request {@code i} is sent at its arrival divided by the time scale (wall seconds from the start)
 * by one timer thread, with its stream's priority in {@code x-kvroute-priority} and tenant in {@link
 * OverloadWorkload#TENANT_HEADER}; bodies are built before the run starts (an overload scenario has a
 * few thousand requests at most). Keep-alive connections are reused between requests, as a pooled
 * client does.
 *
 * <p>Thread-safe (stateless); each {@link #run} uses its own connections and threads.
 */
public final class OverloadDriver {
  private OverloadDriver() {}

  /**
   * Sends every request and waits for the last answer.
   *
   * @throws java.io.IOException if the model cannot be discovered from {@code /v1/models} (when the
   *     settings name none)
   * @throws InterruptedException if interrupted while waiting
   */
  public static OverloadFigures run(OverloadWorkload workload, LoadSettings settings)
      throws java.io.IOException, InterruptedException {
    String model = settings.model() != null ? settings.model() : LoadDriver.discoverModel(settings.target());
    int n = workload.size();
    byte[][] bodies = new byte[n][];
    for (int i = 0; i < n; i++) {
      bodies[i] = CompletionRequests.body(model, null, workload.promptTokens(i), workload.maxTokens(i));
    }
    AtomicReferenceArray<OverloadFigures.Request> results = new AtomicReferenceArray<>(n);
    CountDownLatch left = new CountDownLatch(n);
    ScheduledExecutorService timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "kvroute-overload-timer");
              t.setDaemon(true);
              return t;
            });
    try (StreamingHttpClient client =
        new StreamingHttpClient(settings.target(), settings.ioThreads(), settings.requestTimeout().toNanos())) {
      long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
      for (int i = 0; i < n; i++) {
        int index = i;
        long due = start + (long) (workload.arrivalSeconds(i) / settings.timeScale() * 1e9);
        timer.schedule(
            () -> send(client, workload, index, bodies[index], settings.timeScale(), results, left),
            due - System.nanoTime(), TimeUnit.NANOSECONDS);
      }
      left.await();
    } finally {
      timer.shutdownNow();
    }
    OverloadFigures.Request[] out = new OverloadFigures.Request[n];
    for (int i = 0; i < n; i++) {
      out[i] = results.get(i);
    }
    return new OverloadFigures("real", Arrays.asList(out));
  }

  private static void send(
      StreamingHttpClient client, OverloadWorkload workload, int index, byte[] body, double timeScale,
      AtomicReferenceArray<OverloadFigures.Request> results, CountDownLatch left) {
    OverloadWorkload.Stream s = workload.stream(index);
    Map<String, String> headers =
        Map.of("x-kvroute-priority", Integer.toString(s.priority()), OverloadWorkload.TENANT_HEADER, s.tenant());
    int promptLength = workload.promptLength(index);
    StreamedReply.post(
        client, "/v1/completions", headers, body, false,
        new StreamedReply.Outcome() {
          @Override
          public void completed(ChatStreamReader reader, long sentNanos, String backend) {
            if (reader.promptTokens() != promptLength) {
              end(OverloadFigures.Outcome.FAILED, -1, "usage.prompt_tokens " + reader.promptTokens()
                  + " (expected: " + promptLength + ")");
            } else {
              end(OverloadFigures.Outcome.COMPLETED, (reader.firstContentNanos() - sentNanos) / 1e9 * timeScale, null);
            }
          }

          @Override
          public void failed(String problem) {
            end(OverloadFigures.Outcome.FAILED, -1, problem);
          }

          @Override
          public void refused(int status, boolean retryAfter, String message) {
            if ((status == 429 || status == 503) && retryAfter && message.contains("\"error\"")) {
              end(status == 429 ? OverloadFigures.Outcome.REJECTED : OverloadFigures.Outcome.UNAVAILABLE, -1, null);
            } else {
              end(OverloadFigures.Outcome.FAILED, -1, message + (retryAfter ? "" : " (no Retry-After)"));
            }
          }

          private void end(OverloadFigures.Outcome outcome, double ttft, String detail) {
            if (results.compareAndSet(index, null, new OverloadFigures.Request(index, outcome, ttft, detail))) {
              left.countDown();
            }
          }
        });
  }
}
