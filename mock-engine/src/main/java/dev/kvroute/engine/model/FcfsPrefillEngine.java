package dev.kvroute.engine.model;

import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.PriorityQueue;

/**
 * The explainer's engine: a single first-come-first-served prefill queue, and decodes that run beside
 * it at a fixed pace.
 *
 * <p>A request starts prefilling when the previous prefill has ended and blocks for its whole sequence
 * ({@code prompt + output - 1} tokens, minus its cached prefix) are available; until then it waits at
 * the head of the queue, and so does everything behind it. Its prefill lasts {@code
 * cost.prefillNanos(1, uncachedTokens)}; the first token is emitted when it ends; each further token
 * comes {@code cost.decodeNanos(1, kvUsage)} after the previous one. Events at the same instant are
 * processed in the order: prefill end, decode tokens (in submission order), start of the next prefill.
 *
 * <p>Not thread-safe.
 */
final class FcfsPrefillEngine extends AbstractEngine {
  private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
  private final PriorityQueue<Sequence> decoding =
      new PriorityQueue<>(
          Comparator.<Sequence>comparingLong(s -> s.nextTokenNanos).thenComparingLong(s -> s.order));
  private Sequence prefilling;
  private long prefillEndNanos = Long.MAX_VALUE;
  /** Time of the pending attempt to start the next prefill, or MAX_VALUE. */
  private long kickNanos = Long.MAX_VALUE;

  FcfsPrefillEngine(EngineConfig config) {
    super(config);
  }

  @Override
  public long nextEventNanos() {
    long t = Math.min(prefillEndNanos, kickNanos);
    Sequence d = decoding.peek();
    return d == null ? t : Math.min(t, d.nextTokenNanos);
  }

  @Override
  void enqueue(Sequence s, long now) {
    waiting.addLast(s);
    kick(now);
  }

  @Override
  void remove(Sequence s, long now) {
    if (s == prefilling) {
      prefillNanos -= prefillEndNanos - now;
      prefilling = null;
      prefillEndNanos = Long.MAX_VALUE;
      kick(now);
    } else if (!waiting.remove(s)) {
      decoding.remove(s);
    }
  }

  @Override
  void processNext(long t, EngineListener listener) {
    if (prefillEndNanos == t) {
      Sequence s = prefilling;
      prefilling = null;
      prefillEndNanos = Long.MAX_VALUE;
      s.computed = s.numTokens;
      afterToken(s, t, listener);
      kick(t);
      return;
    }
    Sequence d = decoding.peek();
    if (d != null && d.nextTokenNanos == t) {
      decoding.poll();
      d.computed = d.numTokens;
      afterToken(d, t, listener);
      return;
    }
    if (kickNanos == t) {
      kickNanos = Long.MAX_VALUE;
      tryStartPrefill(t);
      return;
    }
    throw new IllegalStateException("no event at " + t);
  }

  private void afterToken(Sequence s, long t, EngineListener listener) {
    if (emitToken(s, t, listener)) {
      finish(s, t, s.request.finishReason(), listener);
      kick(t);
    } else {
      s.nextTokenNanos = t + cost.decodeNanos(1, (double) pool.used() / pool.capacity());
      decoding.add(s);
    }
  }

  /** Schedules an attempt to start the next prefill at {@code t} if one could start. */
  private void kick(long t) {
    if (prefilling == null && !waiting.isEmpty() && kickNanos > t) {
      kickNanos = t;
    }
  }

  private void tryStartPrefill(long t) {
    if (prefilling != null || waiting.isEmpty()) {
      return;
    }
    Sequence s = waiting.peekFirst();
    int hits = countHits(s);
    int owned = Sequence.blocksFor(s.promptLen + s.outputLen - 1, blockSize) - hits;
    if (pool.available() - evictableAmong(s, hits) < owned) {
      return; // waits for a request to finish; finish() kicks again
    }
    waiting.pollFirst();
    admit(s, hits, owned, t);
    long duration = cost.prefillNanos(1, s.numTokens - s.computed);
    prefillNanos += duration;
    prefilling = s;
    prefillEndNanos = t + duration;
  }

  @Override
  int runningCount() {
    return (prefilling == null ? 0 : 1) + decoding.size();
  }

  @Override
  int waitingCount() {
    return waiting.size();
  }
}
