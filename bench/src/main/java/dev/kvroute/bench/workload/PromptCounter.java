package dev.kvroute.bench.workload;

import java.util.List;

/**
 * Counts the prompt tokens of a chat request as the router and the engines see them (router-core's
 * {@code PromptTokenizer}: chat template plus generation prompt).
 *
 * <p>Implementations are thread-safe.
 */
@FunctionalInterface
public interface PromptCounter {
  /** Prompt tokens of a chat request whose {@code messages} are {@code messages}. */
  int promptTokens(List<ChatMessage> messages);
}
