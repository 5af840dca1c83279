package dev.kvroute.bench.sim;

import dev.kvroute.bench.report.FiguresRecorder;
import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.core.policy.Rule;
import dev.kvroute.engine.model.EngineListener;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The requests of one simulated policy run, from routing to finish: the engine listener of every
 * replica, and the record of what the requests did, shared by {@link Simulation} and {@link
 * OpenLoopSimulation}.
 *
 * <p>A request's lease is marked at its first token and released at its finish, when the router is
 * told of its output; the finish is then recorded (figures, a {@link RequestRecord}, predicted and
 * actual cached tokens) and handed to the simulation's {@link Finish}. Times are model nanoseconds of
 * the simulation's clock.
 *
 * <p>Not thread-safe: one simulation thread owns it.
 *
 * @param <C> what the simulation keeps with each request for its client ({@code Void} for none)
 */
final class SimRequests<C> implements EngineListener {
  /** What a simulation does after a request's finish was recorded. */
  interface Finish<C> {
    void finished(InFlight<C> request, long nowNanos);
  }

  /** A request sent to an engine and not finished yet. Not thread-safe. */
  static final class InFlight<C> {
    final C client;
    final int session;
    final int turn;
    final SimRouter.Routed routed;
    final long sentNanos;
    final int[] outputTokens;
    /** From send to first token, -1 until then. */
    long ttftNanos = -1;
    /** Prompt tokens the engine found in its cache, known at the first token. */
    int cachedTokens;
    /**
     * Whether the request bypassed the routers (side traffic, {@code SideTraffic}): sent straight to
     * {@code routed.replica()}, without a lease or a rule, left out of the figures and records.
     */
    boolean side;

    /**
     * @param client what the simulation keeps for the request's client
     * @param session the session's index for its {@link RequestRecord} (the request's, open-loop)
     * @param turn the turn's index within the session (0, open-loop)
     * @param outputTokens the tokens the engine will generate
     */
    InFlight(C client, int session, int turn, SimRouter.Routed routed, long sentNanos, int[] outputTokens) {
      this.client = client;
      this.session = session;
      this.turn = turn;
      this.routed = routed;
      this.sentNanos = sentNanos;
      this.outputTokens = outputTokens;
    }
  }

  private final SimRouter router;
  private final Finish<C> finish;
  private final Map<Long, InFlight<C>> inFlight = new HashMap<>();
  private final FiguresRecorder figures = new FiguresRecorder();
  private final List<RequestRecord> records = new ArrayList<>();
  private final long[] requestsPerReplica;
  private final EnumMap<Rule, Long> rules = new EnumMap<>(Rule.class);
  private long predictedCached;
  private long actualCached;
  private long sideRequests;
  private long sidePromptTokens;
  private long sideCachedTokens;

  /**
   * @param router the policy's router, told of every finish
   * @param replicas the fleet's replicas
   * @param finish called after each finish was recorded
   */
  SimRequests(SimRouter router, int replicas, Finish<C> finish) {
    this.router = router;
    this.finish = finish;
    this.requestsPerReplica = new long[replicas];
  }

  /** Counts {@code request}, just routed, and tracks it as engine request {@code id}. */
  void sent(long id, InFlight<C> request) {
    if (request.side) {
      inFlight.put(id, request);
      return;
    }
    requestsPerReplica[request.routed.replica()]++;
    rules.merge(request.routed.rule(), 1L, Long::sum);
    inFlight.put(id, request);
  }

  @Override
  public void onFirstToken(long requestId, long nowNanos, int cachedTokens, long prefillNanos, long queueNanos) {
    InFlight<C> f = inFlight.get(requestId);
    f.ttftNanos = nowNanos - f.sentNanos;
    f.cachedTokens = cachedTokens;
    if (!f.side) {
      f.routed.lease().firstToken();
    }
  }

  @Override
  public void onToken(long requestId, long nowNanos, int index, int tokenId) {}

  @Override
  public void onFinished(long requestId, long nowNanos, String reason) {
    InFlight<C> f = inFlight.remove(requestId);
    if (!EngineRequest.LENGTH.equals(reason)) {
      throw new IllegalStateException(
          "request " + requestId + " on replica " + f.routed.replica() + " ended with " + reason);
    }
    if (f.side) {
      sideRequests++;
      sidePromptTokens += f.routed.promptTokens().length;
      sideCachedTokens += f.cachedTokens;
      finish.finished(f, nowNanos);
      return;
    }
    // as the proxy does with usage.prompt_tokens_details.cached_tokens (index.correctFromUsage)
    f.routed.lease().releaseReported(f.cachedTokens);
    router.finished(f.routed, f.outputTokens);
    figures.record(f.routed.promptTokens().length, f.cachedTokens, f.ttftNanos / 1e9);
    records.add(
        new RequestRecord(
            f.session, f.turn, f.sentNanos / 1e9, f.ttftNanos / 1e9, f.routed.promptTokens().length, f.cachedTokens,
            SimPolicies.backendId(f.routed.replica()).name()));
    predictedCached += f.routed.predictedCachedTokens();
    actualCached += f.cachedTokens;
    finish.finished(f, nowNanos);
  }

  /**
   * The policy's figures, with each engine's prefill seconds, once the run is over.
   *
   * @throws IllegalStateException if a request never finished
   */
  PolicyFigures figures(String policy, List<EngineModel> engines) {
    if (!inFlight.isEmpty()) {
      throw new IllegalStateException(inFlight.size() + " requests never finished");
    }
    List<Double> prefill = new ArrayList<>(engines.size());
    for (EngineModel e : engines) {
      prefill.add(e.stats().prefillNanos() / 1e9);
    }
    return figures.figures(policy, prefill);
  }

  /** Finished requests, in finish order. */
  List<RequestRecord> records() {
    return records;
  }

  /** Requests each replica was sent, in fleet order. */
  List<Long> requestsPerReplica() {
    List<Long> perReplica = new ArrayList<>(requestsPerReplica.length);
    for (long n : requestsPerReplica) {
      perReplica.add(n);
    }
    return perReplica;
  }

  /** Requests per rule that decided them. */
  Map<Rule, Long> rules() {
    return rules;
  }

  /** Sum over finished requests of the cached tokens the policy credited the chosen replica with. */
  long predictedCachedTokens() {
    return predictedCached;
  }

  /** Side-traffic requests finished (they are not in the figures). */
  long sideRequests() {
    return sideRequests;
  }

  /** The side traffic's prompt tokens served from cache over its prompt tokens, or 0 without any. */
  double sideHitRate() {
    return sidePromptTokens == 0 ? 0 : (double) sideCachedTokens / sidePromptTokens;
  }

  /** Sum over finished requests of the prompt tokens the chosen replica served from its cache. */
  long actualCachedTokens() {
    return actualCached;
  }
}
