package dev.kvroute.engine.model;

import java.util.Objects;

/**
 * One generation request as the engine model sees it: the prompt's token ids and the token ids it will
 * generate. The caller decides the output in advance (the mock server from its deterministic text
 * generator, the simulator from its workload), so the engine can cache the generated tokens' blocks
 * and the next turn of a chat, which repeats them, finds its whole history.
 *
 * <p>Immutable and thread-safe as long as the caller does not modify the arrays after construction.
 *
 * @param id unique id within one engine
 * @param promptTokens prompt token ids after the chat template; at least one
 * @param outputTokens the token ids to emit, in order; at least one
 * @param finishReason reported when the last output token is emitted: {@code "length"} (the output
 *     reached the requested maximum) or {@code "stop"} (the model ended it early)
 * @param loraName the LoRA adapter the request runs with, or {@code null} for the base model; it
 *     seeds the request's block-hash chain, as vLLM puts the adapter's name into every block hash, so
 *     blocks cached under one adapter are never hits for another (and it is the {@code lora_name} of
 *     the blocks' KV events)
 */
public record EngineRequest(
    long id, int[] promptTokens, int[] outputTokens, String finishReason, String loraName) {

  /** vLLM's {@code finished_reason} for a request that produced its maximum number of tokens. */
  public static final String LENGTH = "length";
  /** vLLM's {@code finished_reason} for a request that ended on an end-of-sequence or stop token. */
  public static final String STOP = "stop";
  /** vLLM's {@code finished_reason} for a cancelled request. */
  public static final String ABORT = "abort";

  public EngineRequest {
    Objects.requireNonNull(promptTokens, "promptTokens");
    Objects.requireNonNull(outputTokens, "outputTokens");
    if (promptTokens.length == 0) {
      throw new IllegalArgumentException("promptTokens: empty (expected: at least one token)");
    }
    if (outputTokens.length == 0) {
      throw new IllegalArgumentException("outputTokens: empty (expected: at least one token)");
    }
    if (!LENGTH.equals(finishReason) && !STOP.equals(finishReason)) {
      throw new IllegalArgumentException(
          "finishReason: " + finishReason + " (expected: \"length\" or \"stop\")");
    }
  }

  /** A request for the base model (no LoRA adapter). */
  public EngineRequest(long id, int[] promptTokens, int[] outputTokens, String finishReason) {
    this(id, promptTokens, outputTokens, finishReason, null);
  }

  /** A request that generates exactly {@code outputTokens} and finishes with {@code "length"}. */
  public static EngineRequest of(long id, int[] promptTokens, int[] outputTokens) {
    return new EngineRequest(id, promptTokens, outputTokens, LENGTH);
  }

  /** Prompt plus output length in tokens. */
  public int totalTokens() {
    return promptTokens.length + outputTokens.length;
  }
}
