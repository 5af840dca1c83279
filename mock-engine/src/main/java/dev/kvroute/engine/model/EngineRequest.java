package dev.kvroute.engine.model;

/**
 * One generation request as the engine model sees it.
 *
 * <p>Immutable and thread-safe (the array is never modified).
 *
 * @param id unique id within one engine
 * @param promptTokens prompt token ids after the chat template
 * @param maxTokens output tokens to generate (with {@code ignore_eos}, exactly this many)
 * @param seed seed for the generated tokens (deterministic per request)
 */
public record EngineRequest(long id, int[] promptTokens, int maxTokens, long seed) {}
