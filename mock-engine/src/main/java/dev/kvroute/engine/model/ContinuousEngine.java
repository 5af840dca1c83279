package dev.kvroute.engine.model;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * A vLLM v1-like continuous-batching engine with chunked prefill.
 *
 * <p>Each step, starting when the previous one ends (or when a request arrives at an idle engine):
 *
 * <ol>
 *   <li>Running requests, oldest first, each get {@code min(numTokens - computed, budget)} tokens: one
 *       for a decode, a chunk of the prompt otherwise; the budget starts at {@code
 *       maxNumBatchedTokens}. A request that needs a new block and cannot get one preempts the newest
 *       running request (LIFO, vLLM v1's default; possibly itself): the victim releases its blocks (its
 *       computed full blocks stay cached), loses its computed tokens and goes to the front of the
 *       queue, to be recomputed over prompt plus generated tokens.
 *   <li>If nobody was preempted, waiting requests are admitted in order while {@code running <
 *       maxNumSeqs} and budget remains: each looks up its cached prefix (this is when {@code
 *       cachedTokens} is fixed) and gets a chunk; one that cannot get blocks waits, and so does every
 *       request behind it (no preemption for admission).
 *   <li>The step lasts {@code cost.prefillNanos(admitted, prefillTokens) + cost.decodeNanos(decodes,
 *       kvUsage)}. When it ends, computed full blocks are registered in the cache and every request
 *       whose tokens are all computed emits its next token; finished requests release their blocks.
 * </ol>
 *
 * <p>Not thread-safe.
 */
final class ContinuousEngine extends AbstractEngine {
  private final ArrayList<Sequence> running = new ArrayList<>();
  private final ArrayDeque<Sequence> waiting = new ArrayDeque<>();
  private final List<Sequence> step = new ArrayList<>();
  private long stepEndNanos = Long.MAX_VALUE;
  private long kickNanos = Long.MAX_VALUE;

  ContinuousEngine(EngineConfig config) {
    super(config);
  }

  @Override
  public long nextEventNanos() {
    return Math.min(stepEndNanos, kickNanos);
  }

  @Override
  void enqueue(Sequence s, long now) {
    waiting.addLast(s);
    if (stepEndNanos == Long.MAX_VALUE && kickNanos > now) {
      kickNanos = now;
    }
  }

  @Override
  void remove(Sequence s, long now) {
    if (!waiting.remove(s)) {
      running.remove(s);
    }
  }

  @Override
  void processNext(long t, EngineListener listener) {
    if (stepEndNanos == t) {
      stepEndNanos = Long.MAX_VALUE;
      completeStep(t, listener);
    } else if (kickNanos == t) {
      kickNanos = Long.MAX_VALUE;
    } else {
      throw new IllegalStateException("no event at " + t);
    }
    if (stepEndNanos == Long.MAX_VALUE) {
      startStep(t);
    }
  }

  private void startStep(long t) {
    int budget = config.maxNumBatchedTokens();
    int prefillTokens = 0;
    int decodes = 0;
    boolean preempted = false;
    for (int i = 0; i < running.size() && budget > 0; i++) {
      Sequence s = running.get(i);
      int n = Math.min(s.numTokens - s.computed, budget);
      boolean decode = s.isDecoding();
      boolean selfPreempted = false;
      while (!grow(s, s.computed + n)) {
        Sequence victim = running.remove(running.size() - 1);
        preempt(victim);
        preempted = true;
        if (victim == s) {
          selfPreempted = true;
          break;
        }
      }
      if (selfPreempted) {
        break; // s was the newest running request; everything before it is scheduled
      }
      s.scheduledTokens = n;
      budget -= n;
      step.add(s);
      if (decode) {
        decodes++;
      } else {
        prefillTokens += n;
      }
    }
    int admitted = 0;
    while (!preempted && budget > 0 && !waiting.isEmpty() && running.size() < config.maxNumSeqs()) {
      Sequence s = waiting.peekFirst();
      int hits = countHits(s);
      int start = hits * blockSize;
      int n = Math.min(s.numTokens - start, budget);
      int owned = Sequence.blocksFor(start + n, blockSize) - hits;
      if (pool.available() - evictableAmong(s, hits) < owned) {
        break;
      }
      waiting.pollFirst();
      admit(s, hits, owned, t);
      running.add(s);
      s.scheduledTokens = n;
      budget -= n;
      step.add(s);
      prefillTokens += n;
      admitted++;
    }
    if (step.isEmpty()) {
      return;
    }
    long prefill = cost.prefillNanos(admitted, prefillTokens);
    prefillNanos += prefill;
    stepEndNanos = t + prefill + cost.decodeNanos(decodes, (double) pool.used() / pool.capacity());
  }

  private void preempt(Sequence s) {
    releaseAll(s);
    s.computed = 0;
    s.scheduledTokens = 0;
    waiting.addFirst(s);
    preemptions++;
  }

  private void completeStep(long t, EngineListener listener) {
    boolean anyFinished = false;
    for (Sequence s : step) {
      if (s.finished || s.scheduledTokens == 0) {
        continue; // aborted, or preempted after being scheduled
      }
      s.computed += s.scheduledTokens;
      s.scheduledTokens = 0;
      if (s.computed < s.numTokens) {
        registerComputed(s);
        continue;
      }
      if (emitToken(s, t, listener)) {
        finish(s, t, s.request.finishReason(), listener);
        anyFinished = true;
      }
    }
    step.clear();
    if (anyFinished) {
      running.removeIf(s -> s.finished);
    }
  }

  @Override
  int runningCount() {
    return running.size();
  }

  @Override
  int waitingCount() {
    return waiting.size();
  }
}
