package dev.kvroute.bench.workload;

import dev.kvroute.core.tokenize.PromptTokenizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A workload whose engines also serve traffic no router sees: the routed sessions, followed by side
 * sessions that a client sends straight to one engine each, bypassing every router. The side sessions
 * fill and evict the engines' caches behind the routers' backs: an approximate index, which learns
 * only from what it routes, keeps predicting pages the side traffic evicted; a precise one reads
 * the evictions (and the side traffic's own pages) from the engines' KV events.
 *
 * <p>The side traffic is a background job per engine, not more chat: one-shot requests, each a new
 * document of the seed scenario's opening-message size (its text shares no prefix with anything else)
 * with a reply of the scenario's size, arriving uniformly over {@link #WINDOW_SECONDS} (about the seed
 * run's length). Such requests cost each engine little prefill time (a 14,000-token document is about
 * 0.9 model s at the seed engine's 15,000 tokens/s) but fill its cache with pages nobody reuses, which
 * evicts the routed sessions' histories sooner. Side session {@code j} (workload index {@code
 * routedSessions + j}) goes to engine {@code j mod replicas}, so every engine gets the same share; keys
 * are {@code side-NNNN}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param workload the routed sessions (indices {@code 0 .. routedSessions-1}) then the side sessions
 * @param routedSessions how many of the workload's sessions go through the routers
 */
public record SideTraffic(Workload workload, int routedSessions) {
  /** Most side sessions per routed session {@link #of} accepts. */
  public static final double MAX_SHARE = 4;

  /** Model seconds over which the side requests arrive. */
  public static final double WINDOW_SECONDS = 200;

  public SideTraffic {
    Objects.requireNonNull(workload, "workload");
    if (routedSessions < 0 || routedSessions > workload.sessions().size()) {
      throw new IllegalArgumentException(
          "routedSessions: " + routedSessions + " (expected: 0.." + workload.sessions().size() + ")");
    }
  }

  /** Everything routed: no side traffic. */
  public static SideTraffic none(Workload routed) {
    return new SideTraffic(routed, routed.sessions().size());
  }

  /**
   * The seed workload {@code routed} (generated from {@code config}) plus {@code share} one-shot side
   * requests per routed session (rounded to the nearest whole request), drawn from {@code config}'s
   * opening-message and reply sizes with another seed. The fleet stays {@code routed}'s: its KV
   * capacity was sized for the routed sessions alone, so the side traffic adds cache pressure.
   *
   * @throws IllegalArgumentException if {@code share} is not within {@code 0 ..} {@link #MAX_SHARE}
   */
  public static SideTraffic of(Workload routed, SeedWorkloadConfig config, double share, PromptTokenizer tokenizer) {
    return of(routed, config, share, WINDOW_SECONDS, tokenizer);
  }

  /**
   * As {@link #of(Workload, SeedWorkloadConfig, double, PromptTokenizer)}, the side requests arriving
   * over {@code windowSeconds} of model time (a shorter workload's length).
   *
   * @throws IllegalArgumentException if {@code share} is not within {@code 0 ..} {@link #MAX_SHARE}, or
   *     {@code windowSeconds} is negative
   */
  public static SideTraffic of(
      Workload routed, SeedWorkloadConfig config, double share, double windowSeconds, PromptTokenizer tokenizer) {
    if (!(share >= 0 && share <= MAX_SHARE)) {
      throw new IllegalArgumentException("side-load share: " + share + " (expected: 0.." + MAX_SHARE + ")");
    }
    int n = routed.sessions().size();
    int side = (int) Math.round(share * n);
    if (side == 0) {
      return none(routed);
    }
    int perReplica = (side + config.replicas() - 1) / config.replicas();
    SeedWorkloadConfig c = config;
    SeedWorkloadConfig sideConfig =
        new SeedWorkloadConfig(
            c.replicas(), perReplica, windowSeconds, c.firstMessageMeanTokens(), c.firstMessageSigma(), 1, 0, 1, 1,
            c.userMessageMeanTokens(), c.userMessageSigma(), c.replyMeanTokens(), c.replySigma(),
            c.thinkMeanSeconds(), c.cacheSessions(), c.prefillTokensPerSecond(), c.prefillOverheadSeconds(),
            c.decodeTokensPerSecond(), c.blockSizeTokens(), c.seed() ^ 0x5_1DE_10ADL);
    Workload generated = SeedWorkload.generate(sideConfig, tokenizer);
    List<Session> sessions = new ArrayList<>(routed.sessions());
    for (int j = 0; j < side; j++) {
      Session s = generated.sessions().get(j);
      sessions.add(new Session(n + j, String.format("side-%04d", j), s.startSeconds(), s.seed(), s.turns()));
    }
    return new SideTraffic(
        new Workload(routed.name(), sessions, routed.fleet(), routed.meanFinalHistoryTokens()), n);
  }

  /** Side sessions. */
  public int sideSessions() {
    return workload.sessions().size() - routedSessions;
  }

  /** Whether session {@code index} goes through the routers. */
  public boolean routed(int index) {
    return index < routedSessions;
  }

  /** The engine session {@code index} is sent to directly, or -1 if it is routed. */
  public int engineOf(int index) {
    return routed(index) ? -1 : (index - routedSessions) % workload.fleet().replicas();
  }

  /** Requests of the routed sessions. */
  public int routedRequests() {
    int r = 0;
    for (int i = 0; i < routedSessions; i++) {
      r += workload.sessions().get(i).turns().size();
    }
    return r;
  }
}
