package dev.kvroute.bench.sim;

import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.workload.CompletionRequests;
import dev.kvroute.bench.workload.OpenLoopWorkload;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;

/**
 * One policy's run of an {@link OpenLoopWorkload} in virtual time: requests arrive at their own times,
 * are routed by the policy's {@link SimRouter} and run on the fleet's engine models, on one
 * discrete-event loop.
 *
 * <p>The loop takes the earliest event: an engine's next internal event, or the next arrival. At equal
 * times engine events go first, so an arrival sees the first tokens and finishes of that instant (as in
 * {@link Simulation}). A request is routed at its arrival and submitted to the chosen engine at the
 * same instant: no network delay (a {@link SendJitter} adds a random delay to every arrival, the timing
 * noise of a real client, network and router). Its lease is marked at the first token and released at the finish.
 * Output tokens are drawn from the reply vocabulary's token ids with a generator seeded by the request
 * index; they never match a later prompt, so only their number matters (the KV they occupy).
 *
 * <p>Not thread-safe; single use.
 */
final class OpenLoopSimulation {
  private static final String MODEL = "kvroute-sim";

  private final OpenLoopWorkload workload;
  private final SendJitter jitter;
  private final int[] replyTokenIds;
  private final VirtualClock clock = new VirtualClock();
  private final List<EngineModel> engines = new ArrayList<>();
  private final SimRouter router;
  private final SimRequests<Void> requests;
  /** Each engine's next event time, refreshed whenever that engine is advanced or given a request. */
  private final long[] nextEvent;
  private long lastFinishNanos;

  /**
   * @param replyTokenIds token ids generated output is drawn from
   * @param jitter the random delay added to every request's arrival
   * @param routerFactory builds the policy's router over the fleet
   */
  OpenLoopSimulation(
      OpenLoopWorkload workload, int[] replyTokenIds, SendJitter jitter, Function<SimFleet, SimRouter> routerFactory) {
    this.workload = workload;
    this.jitter = jitter;
    this.replyTokenIds = replyTokenIds;
    for (int i = 0; i < workload.fleet().replicas(); i++) {
      engines.add(EngineModel.create(workload.engine()));
    }
    nextEvent = new long[engines.size()];
    this.router = routerFactory.apply(new SimFleet(workload.fleet(), List.copyOf(engines), clock));
    this.requests =
        new SimRequests<>(
            router, engines.size(), (f, nowNanos) -> lastFinishNanos = Math.max(lastFinishNanos, nowNanos));
  }

  /** Runs every request to its end and returns the policy's figures. */
  PolicyFigures run(String policy) {
    int next = 0;
    int n = workload.size();
    long[] arrivalNanos = new long[n];
    Integer[] order = new Integer[n];
    SplittableRandom random = new SplittableRandom(jitter.seed());
    long maxJitterNanos = Simulation.secondsToNanos(jitter.maxSeconds());
    for (int i = 0; i < n; i++) {
      long delay = maxJitterNanos > 0 ? (long) (random.nextDouble() * maxJitterNanos) : 0;
      arrivalNanos[i] = Simulation.secondsToNanos(workload.arrivalSeconds(i)) + delay;
      order[i] = i;
    }
    if (maxJitterNanos > 0) {
      Arrays.sort(order, Comparator.comparingLong(i -> arrivalNanos[i])); // stable: index order at ties
    }
    for (int i = 0; i < engines.size(); i++) {
      nextEvent[i] = engines.get(i).nextEventNanos();
    }
    while (true) {
      long engineTime = Long.MAX_VALUE;
      for (long t : nextEvent) {
        engineTime = Math.min(engineTime, t);
      }
      long arrivalTime = next < n ? arrivalNanos[order[next]] : Long.MAX_VALUE;
      if (engineTime == Long.MAX_VALUE && arrivalTime == Long.MAX_VALUE) {
        break;
      }
      if (engineTime <= arrivalTime) {
        clock.advanceTo(engineTime);
        for (int i = 0; i < nextEvent.length; i++) {
          if (nextEvent[i] == engineTime) {
            EngineModel e = engines.get(i);
            e.advanceTo(engineTime, requests);
            nextEvent[i] = e.nextEventNanos();
          }
        }
      } else {
        clock.advanceTo(Math.max(clock.nanos(), arrivalTime));
        send(order[next++]);
      }
    }
    return requests.figures(policy, engines);
  }

  /** What the policy did, after {@link #run}. */
  OpenLoopSimulator.Details details() {
    return new OpenLoopSimulator.Details(
        requests.rules(), requests.requestsPerReplica(), requests.predictedCachedTokens(),
        requests.actualCachedTokens(), lastFinishNanos / 1e9, requests.records());
  }

  private void send(int index) {
    long now = clock.nanos();
    SimRouter.Routed routed =
        router.route(
            CompletionRequests.view(
                MODEL, workload.sessionKey(index), workload.promptTokens(index), workload.maxTokens(index)));
    int replica = routed.replica();
    SimRequests.InFlight<Void> f =
        new SimRequests.InFlight<>(null, index, 0, routed, now, output(index, workload.maxTokens(index)));
    long id = index;
    requests.sent(id, f);
    EngineModel engine = engines.get(replica);
    engine.advanceTo(now, requests);
    engine.submit(EngineRequest.of(id, routed.promptTokens(), f.outputTokens), now);
    nextEvent[replica] = engine.nextEventNanos();
  }

  private int[] output(int index, int length) {
    return output(replyTokenIds, index, length);
  }

  /** Request {@code index}'s {@code length} output tokens, drawn from {@code replyTokenIds} as the class comment says. */
  static int[] output(int[] replyTokenIds, int index, int length) {
    int[] out = new int[length];
    long state = index * 0x9E3779B97F4A7C15L;
    long n = replyTokenIds.length;
    for (int i = 0; i < length; i++) {
      state += 0x9E3779B97F4A7C15L;
      long z = state;
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      z ^= z >>> 31;
      out[i] = replyTokenIds[(int) (((z >>> 32) * n) >>> 32)];
    }
    return out;
  }
}
