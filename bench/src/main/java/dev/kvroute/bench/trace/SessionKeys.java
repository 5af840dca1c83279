package dev.kvroute.bench.trace;

import java.util.Locale;

/**
 * Which session key a replayed Mooncake request carries. The trace has no session ids; a chat service
 * does know its conversations, and in the trace a conversation shows as requests that share their
 * second block (every prompt starts with the same 512-token block, a shared system prompt, and the
 * second block is where conversations diverge; about 85% of the later requests of such a group extend
 * the previous one's prompt).
 */
public enum SessionKeys {
  /** {@code conv-<id of the prompt's second block>} (its only block for a one-block prompt). */
  CONVERSATION,
  /** No session key: {@code sticky} then hashes the prompt's first page, which every request shares. */
  NONE;

  /** The command-line name: {@code conversation} or {@code none}. */
  public String cliName() {
    return name().toLowerCase(Locale.ROOT);
  }

  /**
   * The mode named {@code name} (case-insensitive).
   *
   * @throws IllegalArgumentException for any other name
   */
  public static SessionKeys fromCliName(String name) {
    for (SessionKeys k : values()) {
      if (k.name().equalsIgnoreCase(name)) {
        return k;
      }
    }
    throw new IllegalArgumentException("session-keys: " + name + " (expected: conversation or none)");
  }

  /** The key of {@code request}, or {@code null}. */
  public String keyOf(MooncakeRequest request) {
    if (this == NONE) {
      return null;
    }
    int[] ids = request.hashIds();
    return "conv-" + ids[Math.min(1, ids.length - 1)];
  }
}
