package dev.kvroute.bench.report;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.IntPredicate;

/**
 * What became of every request of an overload run, simulated or real: admitted and answered with a
 * complete stream (with its TTFT from arrival, model seconds), refused by the router (429 or 503), or
 * failed otherwise (which an overload run must not show).
 *
 * <p>Immutable and thread-safe.
 *
 * @param source where the figures come from ({@code simulated}, {@code real})
 * @param requests one per workload request, by index
 */
public record OverloadFigures(String source, List<Request> requests) {
  /** How a request ended. */
  public enum Outcome {
    /** A complete stream. */
    COMPLETED,
    /** 429: the router's queue was full, the request was shed, or it waited past the queue deadline. */
    REJECTED,
    /** 503: no backend could take it. */
    UNAVAILABLE,
    /** Anything else (an error status, a broken stream, a timeout). */
    FAILED
  }

  /**
   * One request's end.
   *
   * @param index the request's index in the workload
   * @param outcome how it ended
   * @param ttftSeconds for a completed request, model seconds from its arrival to its first token; else -1
   * @param detail for a failed request, what went wrong; else {@code null}
   */
  public record Request(int index, Outcome outcome, double ttftSeconds, String detail) {}

  public OverloadFigures {
    Objects.requireNonNull(source, "source");
    requests = List.copyOf(requests);
  }

  /** Requests that ended with {@code outcome}, among those {@code which} accepts (by index). */
  public long count(Outcome outcome, IntPredicate which) {
    return requests.stream().filter(r -> r.outcome() == outcome && which.test(r.index())).count();
  }

  /** Completed requests. */
  public long admitted() {
    return count(Outcome.COMPLETED, i -> true);
  }

  /** Requests refused with 429 or 503. */
  public long rejected() {
    return count(Outcome.REJECTED, i -> true) + count(Outcome.UNAVAILABLE, i -> true);
  }

  /** Requests that failed otherwise. */
  public long failed() {
    return count(Outcome.FAILED, i -> true);
  }

  /** Mean TTFT of the completed requests {@code which} accepts, model seconds; NaN when there is none. */
  public double meanTtft(IntPredicate which) {
    return Arrays.stream(ttfts(which)).average().orElse(Double.NaN);
  }

  /**
   * The {@code q}-quantile (0..1, nearest rank) of the TTFT of the completed requests {@code which}
   * accepts, model seconds; NaN when there is none.
   */
  public double ttftQuantile(IntPredicate which, double q) {
    double[] t = ttfts(which);
    if (t.length == 0) {
      return Double.NaN;
    }
    Arrays.sort(t);
    int rank = (int) Math.ceil(q * t.length);
    return t[Math.max(0, Math.min(t.length - 1, rank - 1))];
  }

  /** Up to {@code n} details of failed requests. */
  public List<String> failureSamples(int n) {
    return requests.stream()
        .filter(r -> r.outcome() == Outcome.FAILED)
        .limit(n)
        .map(r -> "request " + r.index() + ": " + r.detail())
        .toList();
  }

  private double[] ttfts(IntPredicate which) {
    return requests.stream()
        .filter(r -> r.outcome() == Outcome.COMPLETED && which.test(r.index()))
        .mapToDouble(Request::ttftSeconds)
        .toArray();
  }
}
