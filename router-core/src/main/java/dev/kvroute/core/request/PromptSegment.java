package dev.kvroute.core.request;

/**
 * One ordered piece of a prompt as the router sees it: a chat message (role plus its text), a text
 * prompt, or a prompt already given as token ids. Segments are tokenized one by one and cached by
 * {@link #textHash() content hash}, so the tokens of a prompt are the concatenation of its segments'
 * tokens.
 *
 * <p>A text segment read by {@link RequestParser} from a request body refers to the body's bytes and
 * decodes its text only when {@link #text()} is first called (the token cache needs the text only
 * on a miss); its hash is computed while parsing or, if the parser was made not to ({@link
 * RequestParser#create(String, String, boolean)}), when first asked for. The body must therefore stay
 * unchanged until then:
 * if it has changed, {@link #text()} throws {@link IllegalStateException} rather than return other
 * text. Segments made by {@link #text(String, String)} hold their text.
 *
 * <p>Two segments are equal when their roles are equal and either both are text with equal
 * {@link TextHash} (equal texts, up to the collision bound given there) or both are token ids equal
 * by content. Immutable and thread-safe (token arrays are never modified after construction; a
 * decoded text is kept once decoded).
 */
public interface PromptSegment {
  /**
   * A text segment holding {@code text}.
   *
   * @param role chat role ({@code system}, {@code user}, {@code assistant}, {@code tool}...), or
   *     {@code null} for completion prompts
   * @param text the text as it is tokenized
   */
  static PromptSegment text(String role, String text) {
    return TextSegment.of(role, text);
  }

  /** A segment of client-given token ids, used as they are; the array is not copied. */
  static PromptSegment tokens(int[] tokenIds) {
    return new TokenSegment(tokenIds);
  }

  /** The chat role, or {@code null} for completion prompts and token-id segments. */
  String role();

  /**
   * The segment's text as it is tokenized (for chat: content parts joined, tool calls and names
   * rendered, media markers included), or {@code null} for a token-id segment.
   *
   * @throws IllegalStateException if the segment was parsed from a body whose bytes have changed
   *     since
   */
  String text();

  /** The hash of {@link #text()}, computed without decoding it; {@code null} for token ids. */
  TextHash textHash();

  /** The client-given token ids (not a copy; do not modify), or {@code null} for text. */
  int[] tokenIds();

  /**
   * The number of Unicode code points of {@link #text()} ({@code text().codePointCount(0,
   * text().length())}), or {@code 0} for a token-id segment. A segment parsed from a body counts
   * them in the body's bytes, without decoding the text.
   */
  default int codePointCount() {
    String t = text();
    return t == null ? 0 : t.codePointCount(0, t.length());
  }

  /** Whether this segment is given as token ids rather than text. */
  default boolean isTokens() {
    return tokenIds() != null;
  }
}
