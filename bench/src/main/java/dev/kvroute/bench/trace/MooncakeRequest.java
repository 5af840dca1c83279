package dev.kvroute.bench.trace;

import java.util.Arrays;

/**
 * One request of a Mooncake trace (Qin et al., "Mooncake", FAST 2025; schema in
 * {@code ../shared/traces/SOURCES.md}): when it arrived, how long its prompt and its reply were, and
 * its prompt as a list of 512-token block ids.
 *
 * <p>Block ids name prefixes: an id stands for the whole prompt up to and including its block, so two
 * requests that share an id share every block before it too. The last block is partial when {@code
 * inputLength} is not a multiple of {@value #BLOCK_TOKENS}: {@code hashIds.length == ceil(inputLength /
 * 512)}.
 *
 * <p>Immutable and thread-safe as long as nobody modifies {@code hashIds} (the reader never does).
 *
 * @param line 1-based line of the trace file the request was read from
 * @param timestampMillis arrival time in milliseconds from the start of the trace
 * @param inputLength prompt tokens, at least 1
 * @param outputLength reply tokens, at least 1 (replayed as {@code max_tokens} with {@code ignore_eos})
 * @param hashIds one id per 512-token block of the prompt, in order
 */
public record MooncakeRequest(
    int line, long timestampMillis, int inputLength, int outputLength, int[] hashIds) {
  /** Tokens per trace block. */
  public static final int BLOCK_TOKENS = 512;

  /**
   * @throws IllegalArgumentException if a length is below 1, the timestamp is negative, or the number
   *     of block ids is not {@code ceil(inputLength / 512)}
   */
  public MooncakeRequest {
    if (timestampMillis < 0) {
      throw new IllegalArgumentException("timestamp: " + timestampMillis + " (expected: >= 0)");
    }
    if (inputLength < 1) {
      throw new IllegalArgumentException("input_length: " + inputLength + " (expected: >= 1)");
    }
    if (outputLength < 1) {
      throw new IllegalArgumentException("output_length: " + outputLength + " (expected: >= 1)");
    }
    int blocks = blocksFor(inputLength);
    if (hashIds.length != blocks) {
      throw new IllegalArgumentException(
          "hash_ids: " + hashIds.length + " ids (expected: ceil(input_length / 512) = " + blocks + ")");
    }
  }

  /** Blocks of a prompt of {@code tokens} tokens: {@code ceil(tokens / 512)}. */
  public static int blocksFor(int tokens) {
    return (tokens + BLOCK_TOKENS - 1) / BLOCK_TOKENS;
  }

  /** Tokens of the last block: 512, or fewer when the prompt ends inside it. */
  public int lastBlockTokens() {
    return inputLength - (hashIds.length - 1) * BLOCK_TOKENS;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof MooncakeRequest r
        && line == r.line
        && timestampMillis == r.timestampMillis
        && inputLength == r.inputLength
        && outputLength == r.outputLength
        && Arrays.equals(hashIds, r.hashIds);
  }

  @Override
  public int hashCode() {
    return (Long.hashCode(timestampMillis) * 31 + inputLength) * 31 + Arrays.hashCode(hashIds);
  }

  @Override
  public String toString() {
    return "MooncakeRequest[line=" + line + ", timestampMillis=" + timestampMillis + ", inputLength="
        + inputLength + ", outputLength=" + outputLength + ", " + hashIds.length + " blocks]";
  }
}
