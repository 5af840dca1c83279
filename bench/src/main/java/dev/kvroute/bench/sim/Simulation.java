package dev.kvroute.bench.sim;

import dev.kvroute.engine.model.EngineListener;
import dev.kvroute.engine.model.KvCacheEvent;

import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.workload.ChatRequests;
import dev.kvroute.bench.workload.Conversation;
import dev.kvroute.bench.workload.ModelPlan;
import dev.kvroute.bench.workload.Session;
import dev.kvroute.bench.workload.SideTraffic;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.bench.workload.Turn;
import dev.kvroute.bench.workload.Workload;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.model.EngineModel;
import dev.kvroute.engine.model.EngineRequest;
import dev.kvroute.engine.model.LoraSlots;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.function.Function;

/**
 * One policy's run of a workload in virtual time: the sessions' clients, one router and the fleet's
 * engine models on a single discrete-event loop.
 *
 * <p>The loop repeatedly takes the earliest event: an engine's next internal event (prefill end,
 * decode token, scheduling), processed with {@link EngineModel#advanceTo}, or a client's next request
 * (a session's start, or a turn after its think time). At equal times engine events go first, so a
 * request sent at the instant another one finishes sees that finish (the real router's lease is
 * released by then too). A request is routed by the {@link SimRouter} at its send time and submitted
 * to the chosen engine at that same instant: the simulator has no network delay.
 *
 * <p>What each component sees mirrors the real run: the router gets the same {@link RequestView} the
 * proxy would parse from the load driver's body; the lease's first token is marked when the engine
 * emits the first token and released when the request finishes; the reply the client appends to the
 * next turn is the text of the engine's generated tokens. Output tokens are words of the
 * {@link SingleTokenVocabulary} drawn from a generator seeded with the request's seed.
 *
 * <p>Not thread-safe; single use.
 */
final class Simulation {
  private static final String MODEL = "kvroute-sim";

  private final Workload workload;
  private final SingleTokenVocabulary vocabulary;
  private final VirtualClock clock = new VirtualClock();
  private final List<EngineModel> engines = new ArrayList<>();
  /** Each engine's adapter slots: requests reach the engine through them. */
  private final List<LoraGate> gates = new ArrayList<>();
  /** The multi-model workload's models, or null (every request names {@link #MODEL}). */
  private final ModelPlan plan;
  /** Per engine: the requests' listener, also handing the engine's KV events to the router. */
  private final List<EngineListener> listeners = new ArrayList<>();
  private final SimRouter router;
  private final SimRequests<Reply> requests;
  private final PriorityQueue<ClientEvent> clients =
      new PriorityQueue<>(Comparator.comparingLong(ClientEvent::timeNanos).thenComparingLong(ClientEvent::seq));
  private long overPredicted;
  private long underPredicted;
  private int blockSize;
  private final boolean diagnose;
  private final long jitterNanos;
  private final SplittableRandom jitterRandom;
  private long staleAtRoute;
  private long lostAtRoute;
  private long lostTokensAtRoute;
  private long nextSeq;
  private long nextRequestId;
  /** Model time between the router's reads of the adapter slots, or 0 when it reads them live. */
  private final long loraScrapeNanos;
  /** Model time of the router's next read of the adapter slots, or {@link Long#MAX_VALUE}. */
  private long nextScrapeNanos = Long.MAX_VALUE;
  /** Which sessions bypass the router, or null (all routed). */
  private SideTraffic side;
  /** Tokenizes the side traffic's prompts (the router's tokenizer), or null. */
  private PromptTokenizer sideTokenizer;

  private record ClientEvent(long timeNanos, long seq, Conversation conversation) {}

  /** A request's conversation and the reply text it will append. */
  private record Reply(Conversation conversation, String text) {}

  /**
   * @param routerFactory builds the policy's router over the fleet, reading time from the given clock
   *     and the engines' true cache state from the given engines (the oracle does)
   * @param diagnose whether to compare, for every request, the prediction with the chosen engine's
   *     cached prefix and that with the best engine's (costs one prefix lookup per engine and request)
   * @param jitter the random delay added to every request's send time
   */
  Simulation(
      Workload workload,
      SingleTokenVocabulary vocabulary,
      Function<SimFleet, SimRouter> routerFactory,
      boolean diagnose,
      SendJitter jitter) {
    this(workload, vocabulary, routerFactory, diagnose, jitter, null, false);
  }

  /**
   * As above, for a multi-model workload: sessions name their model or adapter as {@code plan} binds
   * them, replica {@code i} serves {@code plan.replicaModels().get(i)}, and every engine has {@code
   * plan.maxLoras()} adapter slots loading in {@code plan.loraLoadSeconds()} (see {@link LoraGate}).
   *
   * @param plan the models, or {@code null} for the single-model run
   * @param loraAffinity whether the router prefers replicas running a request's adapter
   */
  Simulation(
      Workload workload,
      SingleTokenVocabulary vocabulary,
      Function<SimFleet, SimRouter> routerFactory,
      boolean diagnose,
      SendJitter jitter,
      ModelPlan plan,
      boolean loraAffinity) {
    this(workload, vocabulary, routerFactory, diagnose, jitter, plan, loraAffinity, 0);
  }

  /**
   * As above, with the router reading the engines' adapter slots every {@code loraScrapeSeconds} of
   * model time, as the proxy's engine-load scrape reads {@code vllm:lora_requests_info} (every {@code
   * --engine-load-interval} of wall time, which is that times K of model time): LoRA affinity decides
   * on the state of the last read, not the live one. The first read is at a phase drawn from the
   * jitter's seed within the first interval (0 without jitter), since a real router's scrapes start
   * when it does, not with the workload. {@code 0} reads the live state.
   *
   * @throws IllegalArgumentException if {@code loraScrapeSeconds} is negative or not finite
   */
  Simulation(
      Workload workload,
      SingleTokenVocabulary vocabulary,
      Function<SimFleet, SimRouter> routerFactory,
      boolean diagnose,
      SendJitter jitter,
      ModelPlan plan,
      boolean loraAffinity,
      double loraScrapeSeconds) {
    if (!(loraScrapeSeconds >= 0) || Double.isInfinite(loraScrapeSeconds)) {
      throw new IllegalArgumentException("loraScrapeSeconds: " + loraScrapeSeconds + " (expected: >= 0)");
    }
    this.loraScrapeNanos = plan == null ? 0 : secondsToNanos(loraScrapeSeconds);
    this.workload = workload;
    this.plan = plan;
    this.diagnose = diagnose;
    this.jitterNanos = secondsToNanos(jitter.maxSeconds());
    this.jitterRandom = new SplittableRandom(jitter.seed());
    this.vocabulary = vocabulary;
    // every engine records its KV events (vLLM's enable_kv_cache_events); only precise routers read them
    EngineConfig config = FleetEngines.config(workload.fleet()).toBuilder().enableKvCacheEvents(true).build();
    for (int i = 0; i < workload.fleet().replicas(); i++) {
      engines.add(EngineModel.create(config));
    }
    if (plan != null && plan.replicaModels().size() != engines.size()) {
      throw new IllegalArgumentException(
          "plan: " + plan.replicaModels().size() + " replicas (expected: the fleet's " + engines.size() + ")");
    }
    for (EngineModel e : engines) {
      gates.add(
          plan == null
              ? new LoraGate(e, new LoraSlots(1, 0))
              : new LoraGate(e, new LoraSlots(plan.maxLoras(), secondsToNanos(plan.loraLoadSeconds()))));
    }
    blockSize = config.blockSizeTokens();
    SimFleet.Models models =
        plan == null ? null : new SimFleet.Models(plan, List.copyOf(gates), loraAffinity, loraScrapeNanos > 0);
    if (loraScrapeNanos > 0) {
      nextScrapeNanos = jitter.maxSeconds() > 0 ? (long) (new SplittableRandom(~jitter.seed()).nextDouble() * loraScrapeNanos) : 0;
    }
    this.router = routerFactory.apply(new SimFleet(workload.fleet(), List.copyOf(engines), clock, models));
    this.requests = new SimRequests<>(router, engines.size(), this::finished);
    for (int i = 0; i < engines.size(); i++) {
      listeners.add(new EventForwarding(requests, router, i));
    }
  }

  /** An engine's listener: the requests' own, plus its KV events to the router. */
  private record EventForwarding(EngineListener requests, SimRouter router, int replica) implements EngineListener {
    @Override
    public void onFirstToken(long requestId, long nowNanos, int cachedTokens, long prefillNanos, long queueNanos) {
      requests.onFirstToken(requestId, nowNanos, cachedTokens, prefillNanos, queueNanos);
    }

    @Override
    public void onToken(long requestId, long nowNanos, int index, int tokenId) {
      requests.onToken(requestId, nowNanos, index, tokenId);
    }

    @Override
    public void onFinished(long requestId, long nowNanos, String reason) {
      requests.onFinished(requestId, nowNanos, reason);
    }

    @Override
    public void onKvEvents(long nowNanos, List<KvCacheEvent> events) {
      requests.onKvEvents(nowNanos, events);
      router.kvEvents(replica, nowNanos, events);
    }
  }

  /**
   * Sends {@code traffic}'s side sessions straight to their engines instead of through the router
   * (call before {@link #run}; the workload must be {@code traffic.workload()}). Their prompts are
   * tokenized with {@code tokenizer}, as the engine's own tokenizer would; the router neither routes
   * them nor learns of their finish, though a precise router reads their KV events like any other.
   * They are left out of the figures and diagnostics.
   */
  Simulation sideTraffic(SideTraffic traffic, PromptTokenizer tokenizer) {
    if (traffic.workload() != workload) {
      throw new IllegalArgumentException("side traffic: another workload (expected: this simulation's)");
    }
    if (plan != null) {
      throw new IllegalArgumentException("side traffic: a multi-model run (expected: one model)");
    }
    this.side = traffic;
    this.sideTokenizer = tokenizer;
    return this;
  }

  /** Side-traffic requests finished, after {@link #run}. */
  long sideRequests() {
    return requests.sideRequests();
  }

  /** The side traffic's hit rate, after {@link #run}. */
  double sideHitRate() {
    return requests.sideHitRate();
  }

  /** Runs every session to its end and returns the policy's figures. */
  PolicyFigures run(String policy) {
    for (Session s : workload.sessions()) {
      schedule(secondsToNanos(s.startSeconds()), new Conversation(s));
    }
    while (true) {
      long engineTime = Long.MAX_VALUE;
      for (int i = 0; i < engines.size(); i++) {
        engineTime = Math.min(engineTime, Math.min(engines.get(i).nextEventNanos(), gates.get(i).nextEventNanos()));
      }
      ClientEvent next = clients.peek();
      long clientTime = next == null ? Long.MAX_VALUE : next.timeNanos();
      if (engineTime == Long.MAX_VALUE && clientTime == Long.MAX_VALUE) {
        break;
      }
      if (nextScrapeNanos < engineTime && nextScrapeNanos <= clientTime) {
        // the router reads every engine's adapter slots (after the engines' events before this instant)
        clock.advanceTo(nextScrapeNanos);
        for (int i = 0; i < engines.size(); i++) {
          gates.get(i).advanceTo(nextScrapeNanos, listeners.get(i));
          gates.get(i).scrape();
        }
        nextScrapeNanos += loraScrapeNanos;
        continue;
      }
      if (engineTime <= clientTime) {
        clock.advanceTo(engineTime);
        for (int i = 0; i < engines.size(); i++) {
          if (engines.get(i).nextEventNanos() == engineTime || gates.get(i).nextEventNanos() == engineTime) {
            gates.get(i).advanceTo(engineTime, listeners.get(i));
          }
        }
      } else {
        clients.poll();
        clock.advanceTo(clientTime);
        send(next.conversation());
      }
    }
    return requests.figures(policy, engines);
  }

  /** What the policy did, after {@link #run}. */
  SimDiagnostics diagnostics(String policy) {
    return new SimDiagnostics(
        policy, requests.rules(), requests.requestsPerReplica(), requests.predictedCachedTokens(),
        requests.actualCachedTokens(), overPredicted, underPredicted, staleAtRoute, lostAtRoute, lostTokensAtRoute,
        clock.nanos() / 1e9, requests.records(),
        plan == null ? List.of() : gates.stream().map(LoraGate::slotStats).toList());
  }

  private void send(Conversation conversation) {
    long now = clock.nanos();
    Turn turn = conversation.currentTurn();
    Session session = conversation.session();
    ModelPlan.Binding model = plan == null ? null : plan.binding(session.index());
    RequestView view =
        ChatRequests.viewOfSegments(
            model == null ? MODEL : model.served(), session.key(), conversation.nextRequestSegments(),
            turn.replyTokens());
    int direct = side == null ? -1 : side.engineOf(session.index());
    if (direct >= 0) {
      sendDirect(conversation, view, direct, now);
      return;
    }
    SimRouter.Routed routed = router.route(view);
    int replica = routed.replica();
    if (model != null && !plan.replicaModels().get(replica).equals(model.base())) {
      throw new IllegalStateException(
          "request for " + model.served() + " routed to replica " + replica + ", which serves "
              + plan.replicaModels().get(replica));
    }
    if (diagnose) {
      // What the chosen engine and the best engine hold at the decision instant: the index's accuracy.
      String adapter = model == null ? null : model.adapter();
      int atRoute = engines.get(replica).cachedPrefixTokens(routed.promptTokens(), adapter);
      if (routed.predictedCachedTokens() > atRoute + blockSize) {
        staleAtRoute++;
      }
      int best = 0;
      for (int i = 0; i < engines.size(); i++) {
        if (plan == null || plan.replicaModels().get(i).equals(model.base())) {
          best = Math.max(best, engines.get(i).cachedPrefixTokens(routed.promptTokens(), adapter));
        }
      }
      if (best > atRoute + blockSize) {
        lostAtRoute++;
        lostTokensAtRoute += best - atRoute;
      }
    }

    long id = nextRequestId++;
    SimRequests.InFlight<Reply> f = inFlight(conversation, routed, now);
    requests.sent(id, f);
    LoraGate gate = gates.get(replica);
    gate.advanceTo(now, listeners.get(replica));
    gate.submit(
        new EngineRequest(
            id, routed.promptTokens(), f.outputTokens, EngineRequest.LENGTH, model == null ? null : model.adapter()),
        now);
  }

  /** A side session's request, straight to engine {@code replica}: no router, no lease. */
  private void sendDirect(Conversation conversation, RequestView view, int replica, long now) {
    SimRouter.Routed routed = new SimRouter.Routed(replica, sideTokenizer.tokenize(view), null, null, 0);
    long id = nextRequestId++;
    SimRequests.InFlight<Reply> f = inFlight(conversation, routed, now);
    f.side = true;
    requests.sent(id, f);
    LoraGate gate = gates.get(replica);
    gate.advanceTo(now, listeners.get(replica));
    gate.submit(new EngineRequest(id, routed.promptTokens(), f.outputTokens, EngineRequest.LENGTH, null), now);
  }

  /** The in-flight record of the conversation's current turn: its reply drawn from the session's seed. */
  private SimRequests.InFlight<Reply> inFlight(Conversation conversation, SimRouter.Routed routed, long now) {
    Session session = conversation.session();
    SplittableRandom random = new SplittableRandom(session.requestSeed(conversation.turn()));
    int[] indices = new int[conversation.currentTurn().replyTokens()];
    for (int i = 0; i < indices.length; i++) {
      indices[i] = random.nextInt(vocabulary.size());
    }
    return new SimRequests.InFlight<>(
        new Reply(conversation, vocabulary.text(indices)), session.index(), conversation.turn(), routed, now,
        vocabulary.tokenIds(indices));
  }

  /** Schedules the conversation's next request at {@code timeNanos} plus the send jitter. */
  private void schedule(long timeNanos, Conversation conversation) {
    long jitter = jitterNanos > 0 ? (long) (jitterRandom.nextDouble() * jitterNanos) : 0;
    clients.add(new ClientEvent(timeNanos + jitter, nextSeq++, conversation));
  }

  static long secondsToNanos(double seconds) {
    return Math.round(seconds * 1e9);
  }

  /** Counts a finished request's prediction error and schedules its conversation's next turn. */
  private void finished(SimRequests.InFlight<Reply> f, long nowNanos) {
    if (f.side) {
      Conversation c = f.client.conversation();
      double think = c.currentTurn().thinkSeconds();
      c.reply(f.client.text());
      if (!c.done()) {
        schedule(nowNanos + secondsToNanos(think), c);
      }
      return;
    }
    int predicted = f.routed.predictedCachedTokens();
    if (predicted > f.cachedTokens + blockSize) {
      overPredicted++;
    } else if (f.cachedTokens > predicted + blockSize) {
      underPredicted++;
    }
    Conversation c = f.client.conversation();
    if (plan != null) {
      gates.get(f.routed.replica()).finished(plan.binding(c.session().index()).adapter(), nowNanos);
    }
    double think = c.currentTurn().thinkSeconds();
    c.reply(f.client.text());
    if (!c.done()) {
      schedule(nowNanos + secondsToNanos(think), c);
    }
  }
}
