package dev.kvroute.bench.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.Function;

/** Runs one simulation per policy on a bounded pool and returns the results in the policies' order. */
final class PolicyRuns {
  private PolicyRuns() {}

  /**
   * Applies {@code run} to every name on up to {@code threads} threads.
   *
   * @throws RuntimeException the first failure of a run, rethrown as it was
   */
  static <R> List<R> inParallel(List<String> policyNames, int threads, Function<String, R> run) {
    ExecutorService pool = Executors.newFixedThreadPool(Math.min(threads, Math.max(1, policyNames.size())));
    try {
      List<Future<R>> futures = new ArrayList<>();
      for (String p : policyNames) {
        futures.add(pool.submit(() -> run.apply(p)));
      }
      List<R> out = new ArrayList<>();
      for (Future<R> f : futures) {
        out.add(f.get());
      }
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    } finally {
      pool.shutdownNow();
    }
  }
}
