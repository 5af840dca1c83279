package dev.kvroute.core.request;

import java.util.Objects;

/**
 * What a cache keeps of a request's {@link PromptSegment} to recognize the same segment in a later
 * request ({@link #matches}), once the request's body buffer may hold other bytes.
 *
 * <p>A segment that holds its text or token ids is kept as it is (they are immutable) and matched
 * with {@link PromptSegment#sameText}. A segment read from a body is kept in one of two {@link
 * Form}s: a copy of its JSON string's bytes, matched byte for byte, or their length and {@link
 * BytesDigest}, matched by digest: equal bytes always match, and different bytes of the same length
 * match with probability at most about {@code 2^-64} (the bound given there), for a few dozen bytes
 * of heap instead of a copy, and a read of the request's bytes only. Either way a match means the same role and the same JSON string as sent (the same
 * text escaped differently is no match), as {@link PromptSegment#sameText} says.
 *
 * <p>Immutable and thread-safe.
 */
public abstract sealed class KeptSegment {
  /** How a segment read from a body is kept. */
  public enum Form {
    /** A copy of its bytes, compared byte for byte. */
    COPY,
    /** Its length and {@link BytesDigest}. */
    DIGEST;

    /**
     * {@link #DIGEST} where digests are cheap ({@link BytesDigest#FAST}: 512-bit vectors), else
     * {@link #COPY}; the system property {@code kvroute.keptSegments} ({@code copy} or {@code
     * digest}, any case) overrides it, and any other value is ignored with a warning. The choice is
     * logged once, at its first use.
     */
    public static final Form PREFERRED = preferred();

    private static Form preferred() {
      System.Logger log = System.getLogger(KeptSegment.class.getName());
      Form form = BytesDigest.FAST ? DIGEST : COPY;
      String forced = System.getProperty("kvroute.keptSegments", "").trim();
      if (forced.equalsIgnoreCase("copy")) {
        form = COPY;
      } else if (forced.equalsIgnoreCase("digest")) {
        form = DIGEST;
      } else if (!forced.isEmpty()) {
        log.log(System.Logger.Level.WARNING, "kvroute.keptSegments=" + forced
            + " ignored (expected: copy or digest)");
      }
      log.log(System.Logger.Level.INFO, "kept chat prompts recognize their messages by "
          + (form == DIGEST ? "digest" : "byte copy") + " (512-bit vectors "
          + (BytesDigest.FAST ? "usable" : "not usable") + (forced.isEmpty() ? "" : "; kvroute.keptSegments=" + forced)
          + ")");
      return form;
    }
  }

  private final String role;

  private KeptSegment(String role) {
    this.role = role;
  }

  /**
   * {@code s} as a cache keeps it, in {@code form} if it was read from a body. Call it while that
   * body is unchanged.
   */
  public static KeptSegment of(PromptSegment s, Form form) {
    Objects.requireNonNull(form, "form");
    if (s instanceof TextSegment t && t.fromBody()) {
      return form == Form.COPY ? new Copy(t) : new Digest(t);
    }
    return new Held(s);
  }

  /** The kept segment's role. */
  public final String role() {
    return role;
  }

  /** Whether {@code s} has this segment's role and the same text in the same form. */
  public final boolean matches(PromptSegment s) {
    return Objects.equals(role, s.role()) && sameText(s);
  }

  abstract boolean sameText(PromptSegment s);

  /** About how many heap bytes the kept text takes beyond the object's own fields; for cache bounds. */
  public abstract long heldBytes();

  /** A segment that holds its text or ids. */
  private static final class Held extends KeptSegment {
    private final PromptSegment segment;

    Held(PromptSegment segment) {
      super(segment.role());
      this.segment = segment;
    }

    @Override
    boolean sameText(PromptSegment s) {
      return segment.sameText(s);
    }

    @Override
    public long heldBytes() {
      return segment.isTokens() ? 4L * segment.tokenIds().length : 2L * segment.text().length();
    }
  }

  /** A body segment's bytes, copied. */
  private static final class Copy extends KeptSegment {
    private final byte[] bytes;
    private final boolean escaped;

    Copy(TextSegment t) {
      super(t.role());
      this.bytes = t.copyOfBytes();
      this.escaped = t.escaped();
    }

    @Override
    boolean sameText(PromptSegment s) {
      return s instanceof TextSegment t && t.fromBody() && t.escaped() == escaped && t.sameBytes(bytes);
    }

    @Override
    public long heldBytes() {
      return bytes.length;
    }
  }

  /** A body segment's byte length and digest. */
  private static final class Digest extends KeptSegment {
    private final int length;
    private final boolean escaped;
    private final BytesDigest digest;

    Digest(TextSegment t) {
      super(t.role());
      this.length = t.byteLength();
      this.escaped = t.escaped();
      this.digest = t.digest();
    }

    @Override
    boolean sameText(PromptSegment s) {
      return s instanceof TextSegment t && t.fromBody() && t.escaped() == escaped && t.byteLength() == length
          && t.digest().equals(digest);
    }

    @Override
    public long heldBytes() {
      return 32; // the digest record
    }
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + "[role=" + role + "]";
  }
}
