package dev.kvroute.engine.model;

/**
 * Time an engine spends computing, in model nanoseconds. Prefill time depends on uncached (newly
 * computed) tokens only; decode time on whether anything decodes and, for some models, on KV usage.
 *
 * <p>The two schedulers use it as follows:
 *
 * <ul>
 *   <li>{@link EngineConfig.SchedulerKind#FCFS_PREFILL}: a request's prefill lasts {@code
 *       prefillNanos(1, uncachedTokens)}; its output tokens are spaced {@code decodeNanos(1, kvUsage)}
 *       apart, with {@code kvUsage} read when each token is scheduled.
 *   <li>{@link EngineConfig.SchedulerKind#CONTINUOUS}: one step lasts {@code prefillNanos(started,
 *       prefillTokens) + decodeNanos(decodes, kvUsage)}, where {@code started} counts requests whose
 *       first chunk is in the step, {@code prefillTokens} the tokens computed for prompts (and for
 *       recomputation after preemption), {@code decodes} the requests producing their next token from
 *       one new token, and {@code kvUsage} the fraction of KV blocks in use when the step starts. The
 *       additive form is the Dynamo mocker's (it sleeps prefill time plus decode time per pass).
 * </ul>
 *
 * <p>Implementations are immutable and thread-safe.
 */
public interface CostModel {

  /**
   * Model nanoseconds to compute {@code uncachedTokens} prompt tokens belonging to {@code requests}
   * requests that start prefilling in this batch. Returns 0 when {@code uncachedTokens == 0} and
   * {@code requests == 0}.
   */
  long prefillNanos(int requests, int uncachedTokens);

  /**
   * Model nanoseconds of one decode step in which {@code decodes} requests each produce one token,
   * with {@code kvUsage} (0..1) of the KV pool in use. Returns 0 when {@code decodes == 0}.
   */
  long decodeNanos(int decodes, double kvUsage);

  /**
   * The linear model: {@code prefill = requests × prefillOverheadSeconds + uncachedTokens /
   * prefillTokensPerSecond}, and a fixed inter-token latency {@code 1 / decodeTokensPerSecond} per
   * decode step however many requests decode together. This is the explainer's model (seed demo: 15000
   * tokens/s, 0.02 s per request, 30 tokens/s per stream).
   *
   * @throws IllegalArgumentException if a rate is not positive or the overhead is negative
   */
  static CostModel linear(
      double prefillTokensPerSecond, double prefillOverheadSeconds, double decodeTokensPerSecond) {
    return new LinearCostModel(prefillTokensPerSecond, prefillOverheadSeconds, decodeTokensPerSecond);
  }

  /**
   * NVIDIA Dynamo mocker's fitted polynomials ("Gen C", refit from planner sweeps on H200, Dynamo PR
   * #3833; {@code lib/mocker/src/common/perf_model.rs}): {@code prefill_ms(T) = 4.209989e-7·T² +
   * 1.518344e-2·T + 16.50142} where T is the total uncached tokens of the batch (0 ms when T = 0), and
   * {@code decode_ms(u) = max(1, -25.74·u² + 54.01·u + 5.74)} where u is the KV usage fraction, capped at
   * 1 (0 ms when nothing decodes). Sanity points: 1k tokens ≈ 32 ms, 8k ≈ 165 ms; decode ≈ 5.7 ms empty,
   * ≈ 26 ms at 50 % usage, ≈ 34 ms full.
   */
  static CostModel dynamo() {
    return DynamoCostModel.INSTANCE;
  }
}
