package dev.kvroute.core.request;

import java.util.Objects;

/**
 * A text {@link PromptSegment}: either holding its text, or referring to a JSON string in a request
 * body (the bytes between its quotes) and decoding it on first use.
 */
final class TextSegment implements PromptSegment {
  private final String role;
  /**
   * The text's hash; for a body segment {@code null} until first asked for (racy single-check: a
   * record of final fields is safe to publish so, and every thread computes the same value).
   */
  private TextHash hash;
  /** A body segment's {@link BytesDigest}: null until first asked for (racy single-check, as {@code hash}). */
  private BytesDigest digest;
  private final byte[] body;
  private final int start;
  private final int end;
  private final boolean escaped;
  /** The decoded text's code points when counted while reading the body, else -1. */
  private final int codePoints;
  /** The text; for a body segment {@code null} until decoded (racy single-check: a String is safe). */
  private String text;

  private TextSegment(
      String role,
      TextHash hash,
      String text,
      byte[] body,
      int start,
      int end,
      boolean escaped,
      int codePoints) {
    this.role = role;
    this.hash = hash;
    this.text = text;
    this.body = body;
    this.start = start;
    this.end = end;
    this.escaped = escaped;
    this.codePoints = codePoints;
  }

  static TextSegment of(String role, String text) {
    Objects.requireNonNull(text, "text");
    return new TextSegment(role, TextHash.of(text), text, null, 0, 0, false, -1);
  }

  /**
   * A segment for the JSON string whose content lies in {@code body[start, end)} (between its
   * quotes), already validated by the JSON parser.
   *
   * @param escaped whether the content holds a backslash escape
   * @param codePoints the decoded text's code-point count ({@link String#codePointCount}), or -1
   *     when not counted yet (then {@link #codePointCount} counts the bytes when asked)
   * @param hash the decoded text's {@link TextHash} when already computed, or null (then it is
   *     computed from the body's bytes when {@link #textHash} is first called: a policy that reads
   *     no prompt never pays for it)
   */
  static TextSegment ofJson(
      String role, byte[] body, int start, int end, boolean escaped, int codePoints, TextHash hash) {
    return new TextSegment(
        role,
        hash,
        null,
        body,
        start,
        end,
        escaped,
        codePoints);
  }

  @Override
  public String role() {
    return role;
  }

  @Override
  public String text() {
    String t = text;
    if (t == null) {
      TextHash h = hash;
      if (h == null) {
        // hashed and decoded from the same bytes now: nothing was keyed by an earlier state of them
        textHash();
      } else if (!JsonStrings.hash(body, start, end, escaped, new PolynomialHasher()).equals(h)) {
        throw new IllegalStateException(
            "request body changed after parsing (expected: its bytes unchanged while the view is"
                + " in use)");
      }
      t = JsonStrings.decode(body, start, end);
      text = t;
    }
    return t;
  }

  @Override
  public int codePointCount() {
    String t = text;
    if (codePoints >= 0) {
      return codePoints;
    }
    if (t != null || body == null) {
      return t.codePointCount(0, t.length());
    }
    return JsonStrings.codePoints(body, start, end, escaped);
  }

  @Override
  public TextHash textHash() {
    TextHash h = hash;
    if (h == null) {
      h = JsonStrings.hash(body, start, end, escaped, new PolynomialHasher());
      hash = h;
    }
    return h;
  }

  @Override
  public int[] tokenIds() {
    return null;
  }

  @Override
  public long fingerprint() {
    if (body == null) {
      return Fingerprints.mix(Fingerprints.KEY ^ text.hashCode());
    }
    return Fingerprints.ofBytes(body, start, end, escaped);
  }

  @Override
  public boolean sameText(PromptSegment other) {
    if (!(other instanceof TextSegment t) || (body == null) != (t.body == null)) {
      return false; // token ids, or the same text maybe, held in another form
    }
    if (body == null) {
      return text.equals(t.text);
    }
    return escaped == t.escaped && java.util.Arrays.equals(body, start, end, t.body, t.start, t.end);
  }

  /** Whether the segment refers to a request body's bytes (else it holds its text). */
  boolean fromBody() {
    return body != null;
  }

  /** Whether the body's JSON string holds a backslash escape; false for a segment holding its text. */
  boolean escaped() {
    return escaped;
  }

  /** The JSON string's byte length in the body; 0 for a segment holding its text. */
  int byteLength() {
    return end - start;
  }

  /** A copy of the JSON string's bytes in the body. */
  byte[] copyOfBytes() {
    return java.util.Arrays.copyOfRange(body, start, end);
  }

  /** Whether the JSON string's bytes in the body are {@code bytes}. */
  boolean sameBytes(byte[] bytes) {
    return java.util.Arrays.equals(body, start, end, bytes, 0, bytes.length);
  }

  /**
   * The {@link BytesDigest} of the JSON string's bytes in the body, computed when first asked for
   * (racy single-check, as {@link #textHash}).
   */
  BytesDigest digest() {
    BytesDigest d = digest;
    if (d == null) {
      d = BytesDigest.of(body, start, end);
      digest = d;
    }
    return d;
  }

  @Override
  public boolean isTokens() {
    return false;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof TextSegment s && Objects.equals(role, s.role) && textHash().equals(s.textHash());
  }

  @Override
  public int hashCode() {
    return Objects.hashCode(role) * 31 + textHash().hashCode();
  }

  @Override
  public String toString() {
    String t;
    try {
      t = text();
    } catch (IllegalStateException e) {
      t = "<" + (end - start) + " bytes of a changed body>";
    }
    return "PromptSegment[role=" + role + ", text=" + t + "]";
  }
}
