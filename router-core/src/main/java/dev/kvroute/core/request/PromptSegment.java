package dev.kvroute.core.request;

import java.util.Arrays;
import java.util.Objects;

/**
 * One ordered piece of a prompt as the router sees it: a chat message (role plus its text), a text
 * prompt, or a prompt already given as token ids. Segments are tokenized one by one and cached by
 * content, so the tokens of a prompt are the concatenation of its segments' tokens.
 *
 * <p>Immutable and thread-safe (the token array is never modified after construction).
 *
 * @param role chat role ({@code system}, {@code user}, {@code assistant}, {@code tool}...), or
 *     {@code null} for completion prompts
 * @param text the segment's text as it is tokenized (for chat: content parts joined, tool calls and
 *     names rendered, image URLs included so different images differ), or {@code null} when
 *     {@code tokenIds} is given
 * @param tokenIds token ids given by the client, used as they are; {@code null} for text
 */
public record PromptSegment(String role, String text, int[] tokenIds) {
  /** @throws IllegalArgumentException unless exactly one of {@code text} and {@code tokenIds} is given */
  public PromptSegment {
    if ((text == null) == (tokenIds == null)) {
      throw new IllegalArgumentException("exactly one of text and tokenIds must be given");
    }
  }

  /** A text segment; {@code role} is {@code null} for completion prompts. */
  public static PromptSegment text(String role, String text) {
    return new PromptSegment(role, Objects.requireNonNull(text, "text"), null);
  }

  /** A segment of client-given token ids, used as they are. */
  public static PromptSegment tokens(int[] tokenIds) {
    return new PromptSegment(null, null, Objects.requireNonNull(tokenIds, "tokenIds"));
  }

  /** Equal when role, text and token ids (by content) are equal. */
  @Override
  public boolean equals(Object o) {
    return o instanceof PromptSegment p
        && Objects.equals(role, p.role)
        && Objects.equals(text, p.text)
        && Arrays.equals(tokenIds, p.tokenIds);
  }

  @Override
  public int hashCode() {
    return Objects.hash(role, text) * 31 + Arrays.hashCode(tokenIds);
  }

  @Override
  public String toString() {
    return "PromptSegment[role=" + role + ", "
        + (tokenIds != null ? tokenIds.length + " token ids" : "text=" + text) + "]";
  }

  /** Whether this segment is given as token ids rather than text. */
  public boolean isTokens() {
    return tokenIds != null;
  }
}
