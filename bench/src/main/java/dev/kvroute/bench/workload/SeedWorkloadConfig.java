package dev.kvroute.bench.workload;

/**
 * Parameters of the seed scenario, the explainer's experiment: multi-turn chat sessions that each open
 * with a large pasted document, spread over a fleet whose caches hold about ten of each replica's
 * sixteen sessions. Token counts are prompt tokens as {@code PromptTokenizer} counts them (the user text
 * is made of single-token words, so N words are N tokens); times are model seconds.
 *
 * <p>Distributions: a lognormal given by its mean {@code m} and log-space sigma {@code s} has
 * {@code mu = ln(m) - s^2/2}; one given by its median has {@code mu = ln(median)}. Draws are rounded to
 * the nearest integer and are at least 1.
 *
 * <p>Immutable and thread-safe.
 *
 * @param replicas engines in the fleet (default 8)
 * @param sessionsPerReplica sessions per engine; sessions = replicas × this (default 16)
 * @param startWindowSeconds session starts are uniform over {@code [0, startWindowSeconds)} (default 10)
 * @param firstMessageMeanTokens mean length of each session's opening message, the pasted document
 *     (lognormal, default 14,000)
 * @param firstMessageSigma log-space sigma of the opening message length (default 0.5)
 * @param turnsMedian median number of turns (requests) per session (lognormal, default 8)
 * @param turnsSigma log-space sigma of the turn count (default 0.25)
 * @param turnsMin the turn count is clipped to at least this (default 3)
 * @param turnsMax the turn count is clipped to at most this (default 30)
 * @param userMessageMeanTokens mean length of the later user messages (lognormal, default 300)
 * @param userMessageSigma log-space sigma of the later user messages (default 0.5)
 * @param replyMeanTokens mean assistant reply length, sent as {@code max_tokens} with {@code ignore_eos}
 *     (lognormal, default 200)
 * @param replySigma log-space sigma of the reply length (default 0.6)
 * @param thinkMeanSeconds mean think time after each reply completes before the next turn is sent
 *     (exponential, default 5)
 * @param cacheSessions KV capacity of each engine in units of the mean final session history (default
 *     10: about ten of a replica's sixteen sessions fit)
 * @param prefillTokensPerSecond engine prefill rate on uncached tokens (default 15,000)
 * @param prefillOverheadSeconds fixed prefill time per request (default 0.02)
 * @param decodeTokensPerSecond decode rate of each request, independent of the prefill queue (default 30)
 * @param blockSizeTokens KV block size (default 16)
 * @param seed seed of every random draw (default 42)
 */
public record SeedWorkloadConfig(
    int replicas,
    int sessionsPerReplica,
    double startWindowSeconds,
    double firstMessageMeanTokens,
    double firstMessageSigma,
    double turnsMedian,
    double turnsSigma,
    int turnsMin,
    int turnsMax,
    double userMessageMeanTokens,
    double userMessageSigma,
    double replyMeanTokens,
    double replySigma,
    double thinkMeanSeconds,
    double cacheSessions,
    double prefillTokensPerSecond,
    double prefillOverheadSeconds,
    double decodeTokensPerSecond,
    int blockSizeTokens,
    long seed) {

  public SeedWorkloadConfig {
    positive("replicas", replicas);
    positive("sessionsPerReplica", sessionsPerReplica);
    nonNegative("startWindowSeconds", startWindowSeconds);
    positive("firstMessageMeanTokens", firstMessageMeanTokens);
    nonNegative("firstMessageSigma", firstMessageSigma);
    positive("turnsMedian", turnsMedian);
    nonNegative("turnsSigma", turnsSigma);
    positive("turnsMin", turnsMin);
    if (turnsMax < turnsMin) {
      throw new IllegalArgumentException(
          "turnsMax: " + turnsMax + " (expected: >= turnsMin " + turnsMin + ")");
    }
    positive("userMessageMeanTokens", userMessageMeanTokens);
    nonNegative("userMessageSigma", userMessageSigma);
    positive("replyMeanTokens", replyMeanTokens);
    nonNegative("replySigma", replySigma);
    nonNegative("thinkMeanSeconds", thinkMeanSeconds);
    positive("cacheSessions", cacheSessions);
    positive("prefillTokensPerSecond", prefillTokensPerSecond);
    nonNegative("prefillOverheadSeconds", prefillOverheadSeconds);
    positive("decodeTokensPerSecond", decodeTokensPerSecond);
    positive("blockSizeTokens", blockSizeTokens);
  }

  /** The explainer's scenario with the default seed. */
  public static SeedWorkloadConfig defaults() {
    return new SeedWorkloadConfig(
        8, 16, 10, 14_000, 0.5, 8, 0.25, 3, 30, 300, 0.5, 200, 0.6, 5, 10, 15_000, 0.02, 30, 16, 42);
  }

  /**
   * A short run before a measured one, so that the JIT has compiled the request path (parsing of long
   * bodies, tokenizer lookups, index inserts, streaming, the client) of the router, the engines and the
   * load driver: full-size opening messages like this workload's, but four sessions per replica, two
   * turns each, short replies and think times, and another seed, so its prompts share nothing with the
   * measured ones.
   */
  public SeedWorkloadConfig warmUp() {
    return new SeedWorkloadConfig(
        replicas, 4, startWindowSeconds, firstMessageMeanTokens, firstMessageSigma, 2, 0, 2, 2,
        userMessageMeanTokens, userMessageSigma, 50, 0.5, 1, cacheSessions, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond, blockSizeTokens, seed + 1);
  }

  /** Total sessions: {@code replicas × sessionsPerReplica}. */
  public int sessions() {
    return replicas * sessionsPerReplica;
  }

  /** A copy with another seed. */
  public SeedWorkloadConfig withSeed(long newSeed) {
    return new SeedWorkloadConfig(
        replicas, sessionsPerReplica, startWindowSeconds, firstMessageMeanTokens, firstMessageSigma,
        turnsMedian, turnsSigma, turnsMin, turnsMax, userMessageMeanTokens, userMessageSigma,
        replyMeanTokens, replySigma, thinkMeanSeconds, cacheSessions, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond, blockSizeTokens, newSeed);
  }

  /** A copy with another fleet size and sessions per replica (the reduced scenarios of tests). */
  public SeedWorkloadConfig withFleet(int newReplicas, int newSessionsPerReplica) {
    return new SeedWorkloadConfig(
        newReplicas, newSessionsPerReplica, startWindowSeconds, firstMessageMeanTokens,
        firstMessageSigma, turnsMedian, turnsSigma, turnsMin, turnsMax, userMessageMeanTokens,
        userMessageSigma, replyMeanTokens, replySigma, thinkMeanSeconds, cacheSessions,
        prefillTokensPerSecond, prefillOverheadSeconds, decodeTokensPerSecond, blockSizeTokens, seed);
  }

  /** A copy with another KV capacity in units of the mean final session history. */
  public SeedWorkloadConfig withCacheSessions(double newCacheSessions) {
    return new SeedWorkloadConfig(
        replicas, sessionsPerReplica, startWindowSeconds, firstMessageMeanTokens, firstMessageSigma,
        turnsMedian, turnsSigma, turnsMin, turnsMax, userMessageMeanTokens, userMessageSigma,
        replyMeanTokens, replySigma, thinkMeanSeconds, newCacheSessions, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond, blockSizeTokens, seed);
  }

  private static void positive(String name, double value) {
    if (!(value > 0)) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: > 0)");
    }
  }

  private static void nonNegative(String name, double value) {
    if (!(value >= 0)) {
      throw new IllegalArgumentException(name + ": " + value + " (expected: >= 0)");
    }
  }
}
