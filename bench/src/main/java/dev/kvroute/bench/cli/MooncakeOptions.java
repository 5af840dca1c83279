package dev.kvroute.bench.cli;

import dev.kvroute.bench.trace.Arrivals;
import dev.kvroute.bench.trace.MooncakeConfig;
import dev.kvroute.bench.trace.MooncakeReplay;
import dev.kvroute.bench.trace.SessionKeys;
import dev.kvroute.bench.workload.SeedWorkloadConfig;
import dev.kvroute.engine.model.EngineConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The flags of {@code --workload mooncake} (the Mooncake trace replay), each defaulting to {@link
 * MooncakeConfig#defaults()}. The fleet's size and timing come from the shared workload flags ({@code
 * --replicas}, {@code --prefill-tokens-per-second}, {@code --prefill-overhead}, {@code
 * --decode-tokens-per-second}, {@code --seed} for the jitter); {@code --block-size} defaults to 64 for
 * this workload when not given.
 *
 * <p>Not thread-safe (a picocli mixin).
 */
public final class MooncakeOptions {
  private static final MooncakeConfig D = MooncakeConfig.defaults();

  /** KV block size of the trace replay when {@code --block-size} is not given. */
  static final int DEFAULT_BLOCK_SIZE_TOKENS = 64;

  @Spec(Spec.Target.MIXEE)
  CommandSpec mixee;

  @Option(names = "--trace", paramLabel = "PATH", description = "mooncake: the trace (default: shared/traces/" + MooncakeReplay.TRACE_FILE + " in the nearest ancestor directory that has it, i.e. ../shared/traces/ of the repository).")
  Path trace;

  @Option(names = "--slice", paramLabel = "FROM..TO", description = "mooncake: replay the requests arriving in these minutes of the trace, e.g. 20..30 or 45.. (default: the whole trace).")
  String slice = "0..";

  @Option(names = "--rate-multiplier", paramLabel = "X", description = "mooncake: arrivals X times denser than the trace's (default: ${DEFAULT-VALUE}).")
  double rateMultiplier = D.rateMultiplier();

  @Option(names = "--arrivals", paramLabel = "MODE", description = "mooncake: burst (each 3-second bucket of the trace at its timestamp) or jitter (spread uniformly over the bucket, seeded by --seed) (default: ${DEFAULT-VALUE}).")
  String arrivals = D.arrivals().cliName();

  @Option(names = "--session-keys", paramLabel = "MODE", description = "mooncake: conversation (the id of the prompt's second block as the session key) or none (default: ${DEFAULT-VALUE}).")
  String sessionKeys = D.sessionKeys().cliName();

  @Option(names = "--kv-capacity-tokens", paramLabel = "N", description = "mooncake: KV capacity of each engine in tokens (default: ${DEFAULT-VALUE}).")
  long kvCapacityTokens = D.kvCapacityTokens();

  @Option(names = "--scheduler", paramLabel = "KIND", description = "mooncake: the engines' scheduler, fcfs-prefill or continuous (default: ${DEFAULT-VALUE}).")
  String scheduler = D.scheduler().cliName();

  @Option(names = "--max-num-batched-tokens", paramLabel = "N", description = "mooncake: token budget per step of the continuous scheduler (default: ${DEFAULT-VALUE}).")
  int maxNumBatchedTokens = D.maxNumBatchedTokens();

  /**
   * The trace to read: {@code --trace}, or {@link MooncakeReplay#defaultTrace()}.
   *
   * @throws ParameterException if {@code --trace} names no file, a directory or a file that cannot be
   *     read (the message says which)
   */
  public Path tracePath() {
    if (trace == null) {
      return MooncakeReplay.defaultTrace();
    }
    String problem = traceProblem(trace);
    if (problem != null) {
      throw new ParameterException(mixee.commandLine(), "--trace: " + trace + ": " + problem);
    }
    return trace;
  }

  /** What keeps {@code path} from being read as a trace, or {@code null} if nothing does. */
  static String traceProblem(Path path) {
    if (!Files.exists(path)) {
      return "no such file";
    }
    if (Files.isDirectory(path)) {
      return "a directory (expected: the trace's JSON Lines file, e.g. " + MooncakeReplay.TRACE_FILE + ")";
    }
    if (!Files.isReadable(path)) {
      return "not readable (permission denied)";
    }
    return null;
  }

  /**
   * The replay these flags and the shared workload flags describe.
   *
   * @throws ParameterException naming the flag whose value is invalid
   */
  public MooncakeConfig config(SeedWorkloadConfig shared) {
    boolean blockSizeGiven =
        mixee != null
            && mixee.commandLine() != null
            && mixee.commandLine().getParseResult() != null
            && mixee.commandLine().getParseResult().hasMatchedOption("--block-size");
    try {
      double[] range = parseSlice(slice);
      return new MooncakeConfig(
          range[0], range[1], rateMultiplier, Arrivals.fromCliName(arrivals), D.bucketSeconds(), shared.seed(),
          SessionKeys.fromCliName(sessionKeys), shared.replicas(), kvCapacityTokens,
          blockSizeGiven ? shared.blockSizeTokens() : DEFAULT_BLOCK_SIZE_TOKENS,
          EngineConfig.SchedulerKind.fromCliName(scheduler), maxNumBatchedTokens,
          shared.prefillTokensPerSecond(), shared.prefillOverheadSeconds(), shared.decodeTokensPerSecond());
    } catch (IllegalArgumentException e) {
      throw new ParameterException(mixee.commandLine(), e.getMessage(), e);
    }
  }

  /**
   * {@code FROM..TO} or {@code FROM..} in minutes as {@code {from, to}} ({@code to} infinite for the rest).
   *
   * @throws IllegalArgumentException if the text is not of that form
   */
  static double[] parseSlice(String text) {
    int dots = text.indexOf("..");
    if (dots < 0) {
      throw new IllegalArgumentException("--slice: " + text + " (expected: FROM..TO or FROM.. in minutes, e.g. 20..30)");
    }
    try {
      double from = dots == 0 ? 0 : Double.parseDouble(text.substring(0, dots).trim());
      String rest = text.substring(dots + 2).trim();
      double to = rest.isEmpty() ? Double.POSITIVE_INFINITY : Double.parseDouble(rest);
      if (!(from >= 0) || !(to > from)) {
        throw new IllegalArgumentException("--slice: " + text + " (expected: 0 <= FROM < TO, minutes)");
      }
      return new double[] {from, to};
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("--slice: " + text + " (expected: FROM..TO or FROM.. in minutes, e.g. 20..30)", e);
    }
  }
}
