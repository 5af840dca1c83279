package dev.kvroute.bench.cli;

import dev.kvroute.bench.workload.SeedWorkloadConfig;
import picocli.CommandLine.Option;

/**
 * The seed workload's parameters as flags, each defaulting to the explainer's scenario
 * ({@link SeedWorkloadConfig#defaults()}). A command mixes in {@link SeedOnly} when it runs only the
 * seed workload and {@link SeedOrTrace} when it also replays the Mooncake trace, whose {@code
 * --block-size} defaults to {@link MooncakeOptions#DEFAULT_BLOCK_SIZE_TOKENS} instead; the two differ
 * only in what {@code --block-size}'s help says.
 *
 * <p>Not thread-safe (a picocli mixin).
 */
public abstract sealed class SeedWorkloadOptions permits SeedWorkloadOptions.SeedOnly, SeedWorkloadOptions.SeedOrTrace {
  private static final SeedWorkloadConfig D = SeedWorkloadConfig.defaults();

  /** The flags of a command that runs only the seed workload. */
  public static final class SeedOnly extends SeedWorkloadOptions {
    @Option(names = "--block-size", paramLabel = "TOKENS", description = "KV block size (default: ${DEFAULT-VALUE}).")
    int blockSizeTokens = D.blockSizeTokens();

    @Override
    int blockSizeTokens() {
      return blockSizeTokens;
    }
  }

  /** The flags of a command that runs the seed workload or replays the Mooncake trace. */
  public static final class SeedOrTrace extends SeedWorkloadOptions {
    @Option(names = "--block-size", paramLabel = "TOKENS",
        description = "KV block size (default: ${DEFAULT-VALUE} for --workload seed, "
            + MooncakeOptions.DEFAULT_BLOCK_SIZE_TOKENS + " for --workload mooncake).")
    int blockSizeTokens = D.blockSizeTokens();

    @Override
    int blockSizeTokens() {
      return blockSizeTokens;
    }
  }

  private SeedWorkloadOptions() {}

  /** The value of {@code --block-size}, or the seed workload's default. */
  abstract int blockSizeTokens();

  @Option(names = "--seed", paramLabel = "N", description = "Seed of every random draw of the workload (default: ${DEFAULT-VALUE}).")
  long seed = D.seed();

  @Option(names = "--replicas", paramLabel = "N", description = "Engines in the fleet (default: ${DEFAULT-VALUE}).")
  int replicas = D.replicas();

  @Option(names = "--sessions-per-replica", paramLabel = "N", description = "Sessions per engine (default: ${DEFAULT-VALUE}).")
  int sessionsPerReplica = D.sessionsPerReplica();

  @Option(names = "--start-window", paramLabel = "SECONDS", description = "Session starts are uniform over this many model seconds (default: ${DEFAULT-VALUE}).")
  double startWindowSeconds = D.startWindowSeconds();

  @Option(names = "--first-message-mean", paramLabel = "TOKENS", description = "Mean length of each session's opening message (lognormal; default: ${DEFAULT-VALUE}).")
  double firstMessageMeanTokens = D.firstMessageMeanTokens();

  @Option(names = "--first-message-sigma", paramLabel = "S", description = "Log-space sigma of the opening message (default: ${DEFAULT-VALUE}).")
  double firstMessageSigma = D.firstMessageSigma();

  @Option(names = "--turns-median", paramLabel = "N", description = "Median turns per session (lognormal; default: ${DEFAULT-VALUE}).")
  double turnsMedian = D.turnsMedian();

  @Option(names = "--turns-sigma", paramLabel = "S", description = "Log-space sigma of the turn count (default: ${DEFAULT-VALUE}).")
  double turnsSigma = D.turnsSigma();

  @Option(names = "--turns-min", paramLabel = "N", description = "Fewest turns per session (default: ${DEFAULT-VALUE}).")
  int turnsMin = D.turnsMin();

  @Option(names = "--turns-max", paramLabel = "N", description = "Most turns per session (default: ${DEFAULT-VALUE}).")
  int turnsMax = D.turnsMax();

  @Option(names = "--user-message-mean", paramLabel = "TOKENS", description = "Mean length of later user messages (lognormal; default: ${DEFAULT-VALUE}).")
  double userMessageMeanTokens = D.userMessageMeanTokens();

  @Option(names = "--user-message-sigma", paramLabel = "S", description = "Log-space sigma of later user messages (default: ${DEFAULT-VALUE}).")
  double userMessageSigma = D.userMessageSigma();

  @Option(names = "--reply-mean", paramLabel = "TOKENS", description = "Mean reply length, sent as max_tokens with ignore_eos (lognormal; default: ${DEFAULT-VALUE}).")
  double replyMeanTokens = D.replyMeanTokens();

  @Option(names = "--reply-sigma", paramLabel = "S", description = "Log-space sigma of the reply length (default: ${DEFAULT-VALUE}).")
  double replySigma = D.replySigma();

  @Option(names = "--think-mean", paramLabel = "SECONDS", description = "Mean think time after each reply completes (exponential, model seconds; default: ${DEFAULT-VALUE}).")
  double thinkMeanSeconds = D.thinkMeanSeconds();

  @Option(names = "--cache-sessions", paramLabel = "X", description = "Engine KV capacity in mean final session histories (default: ${DEFAULT-VALUE}).")
  double cacheSessions = D.cacheSessions();

  @Option(names = "--prefill-tokens-per-second", paramLabel = "R", description = "Engine prefill rate on uncached tokens (default: ${DEFAULT-VALUE}).")
  double prefillTokensPerSecond = D.prefillTokensPerSecond();

  @Option(names = "--prefill-overhead", paramLabel = "SECONDS", description = "Engine prefill time per request (default: ${DEFAULT-VALUE}).")
  double prefillOverheadSeconds = D.prefillOverheadSeconds();

  @Option(names = "--decode-tokens-per-second", paramLabel = "R", description = "Decode rate of each request (default: ${DEFAULT-VALUE}).")
  double decodeTokensPerSecond = D.decodeTokensPerSecond();

  /** The configuration these flags describe. */
  public SeedWorkloadConfig config() {
    return new SeedWorkloadConfig(
        replicas, sessionsPerReplica, startWindowSeconds, firstMessageMeanTokens, firstMessageSigma,
        turnsMedian, turnsSigma, turnsMin, turnsMax, userMessageMeanTokens, userMessageSigma,
        replyMeanTokens, replySigma, thinkMeanSeconds, cacheSessions, prefillTokensPerSecond,
        prefillOverheadSeconds, decodeTokensPerSecond, blockSizeTokens(), seed);
  }
}
