package dev.kvroute.core.request;

/**
 * Bounds vLLM puts on a generation request's sampling fields, which the router and the mock engine
 * enforce as vLLM does.
 *
 * <p>{@link #MAX_N_SEQUENCES}: the largest {@code n} (completions per prompt), vLLM's {@code
 * VLLM_MAX_N_SEQUENCES} (default 16384, {@code vllm/envs.py}; checked by {@code
 * SamplingParams._verify_args}, answered 400 "n must be at most 16384, got N. ..."). Read from the
 * same environment variable when it is set to a positive integer, so a router in front of engines
 * started with a higher limit can be given it too.
 */
public final class SamplingLimits {
  /** vLLM's default {@code VLLM_MAX_N_SEQUENCES}. */
  public static final int DEFAULT_MAX_N_SEQUENCES = 16384;

  /** The largest {@code n} accepted: {@code $VLLM_MAX_N_SEQUENCES}, else 16384. */
  public static final int MAX_N_SEQUENCES = maxN(System.getenv("VLLM_MAX_N_SEQUENCES"));

  private SamplingLimits() {}

  static int maxN(String env) {
    if (env == null) {
      return DEFAULT_MAX_N_SEQUENCES;
    }
    try {
      int n = Integer.parseInt(env.trim());
      return n > 0 ? n : DEFAULT_MAX_N_SEQUENCES;
    } catch (NumberFormatException e) {
      return DEFAULT_MAX_N_SEQUENCES;
    }
  }

  /** vLLM's message for {@code n} below 1. */
  public static String nTooSmall(long n) {
    return "n must be at least 1, got " + n + ".";
  }

  /** vLLM's message for {@code n} above {@link #MAX_N_SEQUENCES}. */
  public static String nTooLarge(long n) {
    return "n must be at most " + MAX_N_SEQUENCES + ", got " + n + ". To increase this limit, set the"
        + " VLLM_MAX_N_SEQUENCES environment variable.";
  }
}
