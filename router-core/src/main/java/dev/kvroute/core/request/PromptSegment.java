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

  /**
   * A 64-bit digest of the segment as it holds its text, cheap to compute whatever the text's length:
   * for a segment read from a body, of its byte length and four 8-byte words of its bytes (the first,
   * the last and two between); for one holding its text, of the text's {@link String#hashCode};
   * for token ids, of their {@link java.util.Arrays#hashCode}; each mixed with a key drawn once per
   * JVM. Two segments for which {@link #sameText} holds have the same fingerprint. The converse does
   * not hold, by design: two texts that agree on those bytes share a fingerprint, so a fingerprint
   * only finds candidates, and {@link #sameText} (or a {@link KeptSegment}) confirms them.
   */
  default long fingerprint() {
    int h = isTokens() ? java.util.Arrays.hashCode(tokenIds()) : text().hashCode();
    return Fingerprints.mix(Fingerprints.KEY ^ h);
  }

  /**
   * Whether {@code other} holds the same text in the same form (or the same token ids), byte for
   * byte: two segments read from bodies compare their JSON string's bytes as sent, two holding
   * their text compare it. May answer {@code false} for the same text held in different forms (one
   * read from a body, one built from a string, or the same text escaped differently), never
   * {@code true} for different texts. The role is not compared.
   */
  default boolean sameText(PromptSegment other) {
    if (isTokens() || other.isTokens()) {
      return isTokens() && other.isTokens() && java.util.Arrays.equals(tokenIds(), other.tokenIds());
    }
    return text().equals(other.text());
  }

  /** Whether this segment is given as token ids rather than text. */
  default boolean isTokens() {
    return tokenIds() != null;
  }
}
