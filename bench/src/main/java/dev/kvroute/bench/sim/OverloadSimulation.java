package dev.kvroute.bench.sim;

import dev.kvroute.bench.report.OverloadFigures;
import dev.kvroute.bench.workload.CompletionRequests;
import dev.kvroute.bench.workload.OverloadWorkload;
import dev.kvroute.core.admission.AdmissionQueue;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One policy's run of an {@link OverloadWorkload} in virtual time with the router's admission control
 * in front of the fleet: the same {@link AdmissionQueue} the proxy's {@code Admission} drives, on the
 * simulation's clock, with the same rules.
 *
 * <p><b>Admission, as the proxy does it.</b> A backend's free slots are its limit minus the requests
 * in flight on it (routed and not finished; the simulated engines serve no foreign traffic and never
 * fill their KV, so the engine-reported part of the proxy's rule is zero). An arriving request is
 * routed at once when the queue is empty and the fleet has a free slot; the policy then chooses among
 * the backends with a free slot. Otherwise it is offered to the queue, with its stream's priority and
 * tenant (weight 1, as the proxy): refused when the queue is full of better requests (429), or queued,
 * perhaps shedding a worse one (429 for that one). A finished request frees a slot: the queue's first
 * tickets are routed while slots are free. A ticket whose deadline passes is refused (429) at that
 * instant.
 *
 * <p><b>Events.</b> The loop takes the earliest of: an engine's next event, the next arrival, the
 * queue's next deadline. At equal times engine events go first (a slot freed at the instant a
 * deadline passes admits the ticket), then deadlines, then arrivals. TTFT is measured from the
 * request's arrival, so it includes its wait in the queue, as a client sees it.
 *
 * <p>Not thread-safe; single use.
 */
public final class OverloadSimulation {
  private static final String MODEL = "kvroute-sim";

  private final OverloadWorkload workload;
  private final AdmissionLimits limits;
  private final int[] replyTokenIds;
  private final VirtualClock clock = new VirtualClock();
  private final List<EngineModel> engines = new ArrayList<>();
  private final SimRouter router;
  private final SimRequests<Void> requests;
  private final AdmissionQueue<Integer> queue;
  private final long[] nextEvent;
  private final int[] inFlight;
  private final long[] arrivalNanos;
  private final OverloadFigures.Request[] results;
  private boolean released;

  private OverloadSimulation(
      OverloadWorkload workload, AdmissionLimits limits, int[] replyTokenIds, SimPolicies policies, String policy,
      PromptTokenizer tokenizer) {
    this.workload = workload;
    this.limits = limits;
    this.replyTokenIds = replyTokenIds;
    for (int i = 0; i < workload.fleet().replicas(); i++) {
      engines.add(EngineModel.create(workload.engine()));
    }
    nextEvent = new long[engines.size()];
    inFlight = new int[engines.size()];
    router = policies.router(policy, new SimFleet(workload.fleet(), List.copyOf(engines), clock), tokenizer);
    requests = new SimRequests<>(router, engines.size(), this::finished);
    queue = new AdmissionQueue<>(clock, limits.maxQueueLength(), Long.MAX_VALUE,
        Duration.ofNanos(Simulation.secondsToNanos(limits.deadlineSeconds())), t -> 1.0);
    arrivalNanos = new long[workload.size()];
    results = new OverloadFigures.Request[workload.size()];
  }

  /**
   * Simulates {@code workload} under {@code policy} with the router's admission at {@code limits}.
   *
   * @param vocabulary the words engines generate replies from
   * @throws IllegalArgumentException if the policy name is unknown
   */
  public static OverloadFigures run(
      OverloadWorkload workload, AdmissionLimits limits, SimPolicies policies, String policy,
      PromptTokenizer tokenizer, SingleTokenVocabulary vocabulary) {
    policies.check(policy);
    int[] reply = new int[vocabulary.size()];
    for (int i = 0; i < reply.length; i++) {
      reply[i] = vocabulary.tokenId(i);
    }
    return new OverloadSimulation(workload, limits, reply, policies, policy, tokenizer).run();
  }

  private OverloadFigures run() {
    int n = workload.size();
    for (int i = 0; i < n; i++) {
      arrivalNanos[i] = Simulation.secondsToNanos(workload.arrivalSeconds(i));
    }
    for (int i = 0; i < engines.size(); i++) {
      nextEvent[i] = engines.get(i).nextEventNanos();
    }
    int next = 0;
    while (true) {
      long engineTime = Long.MAX_VALUE;
      for (long t : nextEvent) {
        engineTime = Math.min(engineTime, t);
      }
      long deadline = queue.nextDeadlineNanos();
      long arrival = next < n ? arrivalNanos[next] : Long.MAX_VALUE;
      if (engineTime == Long.MAX_VALUE && deadline == Long.MAX_VALUE && arrival == Long.MAX_VALUE) {
        break;
      }
      if (engineTime <= deadline && engineTime <= arrival) {
        clock.advanceTo(engineTime);
        for (int i = 0; i < nextEvent.length; i++) {
          if (nextEvent[i] == engineTime) {
            EngineModel e = engines.get(i);
            e.advanceTo(engineTime, requests);
            nextEvent[i] = e.nextEventNanos();
          }
        }
      } else if (deadline <= arrival) {
        clock.advanceTo(deadline);
        for (AdmissionQueue.Ticket<Integer> t : queue.expire()) {
          refuse(t.item());
        }
      } else {
        clock.advanceTo(Math.max(clock.nanos(), arrival));
        arrive(next++);
      }
      if (released) {
        released = false;
        dispatch();
      }
    }
    requests.figures("admission", engines); // checks that every routed request finished
    return new OverloadFigures("simulated", Arrays.asList(results));
  }

  private void arrive(int index) {
    if (queue.isEmpty() && freeSlots() > 0) {
      send(index);
      return;
    }
    OverloadWorkload.Stream s = workload.stream(index);
    AdmissionQueue.Offer<Integer> offer = queue.offer(index, s.priority(), s.tenant(), 0);
    for (AdmissionQueue.Ticket<Integer> shed : offer.shed()) {
      refuse(shed.item());
    }
    if (offer.ticket() == null) {
      refuse(index);
    }
  }

  /** A slot was freed (under the proxy's lock, its {@code released}): admits queued tickets while slots are free. */
  private void dispatch() {
    while (!queue.isEmpty() && freeSlots() > 0) {
      send(queue.poll(x -> true).item());
    }
  }

  private int freeSlots() {
    int free = 0;
    for (int f : inFlight) {
      free += Math.max(0, limits.perBackend() - f);
    }
    return free;
  }

  private void send(int index) {
    long now = clock.nanos();
    SimRouter.Routed routed =
        router.route(
            CompletionRequests.view(MODEL, null, workload.promptTokens(index), workload.maxTokens(index)),
            i -> inFlight[i] < limits.perBackend());
    int replica = routed.replica();
    inFlight[replica]++;
    int[] output = OpenLoopSimulation.output(replyTokenIds, index, workload.maxTokens(index));
    SimRequests.InFlight<Void> f = new SimRequests.InFlight<>(null, index, 0, routed, arrivalNanos[index], output);
    requests.sent(index, f);
    EngineModel engine = engines.get(replica);
    engine.advanceTo(now, requests);
    engine.submit(EngineRequest.of(index, routed.promptTokens(), output), now);
    nextEvent[replica] = engine.nextEventNanos();
  }

  private void finished(SimRequests.InFlight<Void> f, long nowNanos) {
    inFlight[f.routed.replica()]--;
    results[f.session] = new OverloadFigures.Request(f.session, OverloadFigures.Outcome.COMPLETED, f.ttftNanos / 1e9, null);
    released = true;
  }

  private void refuse(int index) {
    results[index] = new OverloadFigures.Request(index, OverloadFigures.Outcome.REJECTED, -1, null);
  }
}
