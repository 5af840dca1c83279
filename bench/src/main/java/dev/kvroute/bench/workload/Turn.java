package dev.kvroute.bench.workload;

import java.util.Objects;

/**
 * One turn of a session: the user message the client adds to the history, the reply length it asks
 * for, and how long the user thinks after the reply completes before sending the next turn.
 *
 * <p>Immutable and thread-safe.
 *
 * @param userText the new user message, made of single-token words
 * @param userTokens tokens of {@code userText} (its word count)
 * @param replyTokens output tokens requested, sent as {@code max_tokens} with {@code ignore_eos}, so the
 *     reply is exactly this long
 * @param thinkSeconds model seconds between the end of this turn's reply and the next turn's request
 */
public record Turn(String userText, int userTokens, int replyTokens, double thinkSeconds) {
  public Turn {
    Objects.requireNonNull(userText, "userText");
    if (replyTokens < 1) {
      throw new IllegalArgumentException("replyTokens: " + replyTokens + " (expected: >= 1)");
    }
    if (!(thinkSeconds >= 0)) {
      throw new IllegalArgumentException("thinkSeconds: " + thinkSeconds + " (expected: >= 0)");
    }
  }
}
