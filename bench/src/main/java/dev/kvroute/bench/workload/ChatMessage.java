package dev.kvroute.bench.workload;

import java.util.Objects;

/**
 * One message of a chat history as the client sends it in {@code messages}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param role {@code system}, {@code user} or {@code assistant}
 * @param content the message text
 */
public record ChatMessage(String role, String content) {
  public ChatMessage {
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(content, "content");
  }

  public static ChatMessage user(String content) {
    return new ChatMessage("user", content);
  }

  public static ChatMessage assistant(String content) {
    return new ChatMessage("assistant", content);
  }
}
