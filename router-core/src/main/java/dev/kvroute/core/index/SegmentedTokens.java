package dev.kvroute.core.index;

import java.util.Arrays;
import java.util.Objects;

/**
 * A prompt's token ids held as consecutive runs of arrays that may be other prompts' own: a chat
 * turn is its previous turn's tokens (shared, not copied) followed by the tokens of its new
 * messages. {@link #toArray()} assembles the flat array on first use and keeps it; the radix index
 * hashes such a prompt's pages without it ({@link PrefixIndex#prompt(SegmentedTokens, long,
 * PageHashes, int)}), so a turn routed from its previous turn's page hashes never reads the shared
 * tokens at all.
 *
 * <p>Shape: at most {@value #MAX_SEGMENTS} segments; {@link #append} past that assembles the flat
 * array and starts again from it, so locating a token costs at most that many comparisons.
 *
 * <p>Immutable (the arrays given are not copied and must not be modified afterwards) and
 * thread-safe: the flat array is published through a volatile field, and two threads that assemble
 * it at once build equal arrays.
 */
public final class SegmentedTokens {
  /** The most segments kept before {@link #append} flattens them. */
  static final int MAX_SEGMENTS = 32;

  private static final int[][] NO_ARRAYS = new int[0][];

  private final int[][] arrays; // segment i is arrays[i][0, ends[i] - start(i))
  private final int[] ends; // cumulative: ends[i] is the prompt offset just past segment i
  private volatile int[] flat; // the whole prompt, once assembled (or the one array given)

  private SegmentedTokens(int[][] arrays, int[] ends, int[] flat) {
    this.arrays = arrays;
    this.ends = ends;
    this.flat = flat;
  }

  /** The tokens of {@code tokens}, not copied: {@link #toArray()} returns that array. */
  public static SegmentedTokens of(int[] tokens) {
    Objects.requireNonNull(tokens, "tokens");
    return new SegmentedTokens(new int[][] {tokens}, new int[] {tokens.length}, tokens);
  }

  /** The prompt's length in tokens. */
  public int length() {
    return ends.length == 0 ? 0 : ends[ends.length - 1];
  }

  /** How many arrays hold the tokens; for tests. */
  int segments() {
    return arrays.length;
  }

  /**
   * The first {@code length} tokens, sharing this prompt's arrays.
   *
   * @throws IllegalArgumentException if {@code length} is negative or above {@link #length()}
   */
  public SegmentedTokens prefix(int length) {
    if (length < 0 || length > length()) {
      throw new IllegalArgumentException("length: " + length + " (expected: 0 to " + length() + ")");
    }
    if (length == length()) {
      return this;
    }
    int n = 0;
    while (n < ends.length && ends[n] < length) {
      n++;
    }
    if (length > 0) {
      n++; // the segment the prefix ends in, cut at length
    }
    int[] newEnds = Arrays.copyOf(ends, n);
    if (n > 0) {
      newEnds[n - 1] = length;
    }
    return new SegmentedTokens(n == 0 ? NO_ARRAYS : Arrays.copyOf(arrays, n), newEnds, null);
  }

  /**
   * These tokens followed by {@code tail}'s (not copied); when that would make more than {@value
   * #MAX_SEGMENTS} segments, one flat array of both instead.
   */
  public SegmentedTokens append(int[] tail) {
    Objects.requireNonNull(tail, "tail");
    int length = length();
    if ((long) length + tail.length > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("prompt: " + ((long) length + tail.length)
          + " tokens (expected: fewer than 2^31)");
    }
    if (length == 0) {
      return of(tail);
    }
    if (arrays.length >= MAX_SEGMENTS) {
      int[] all = new int[length + tail.length];
      copy(0, all, 0, length);
      System.arraycopy(tail, 0, all, length, tail.length);
      return of(all);
    }
    int n = arrays.length;
    int[][] newArrays = Arrays.copyOf(arrays, n + 1);
    newArrays[n] = tail;
    int[] newEnds = Arrays.copyOf(ends, n + 1);
    newEnds[n] = length + tail.length;
    return new SegmentedTokens(newArrays, newEnds, null);
  }

  /**
   * These tokens as they are best kept: in one array if {@link #toArray()} has assembled it (the
   * segments, which may hold other prompts' arrays, are let go), else as they are. A prompt kept for
   * a later turn is kept this way, so that it never holds both.
   */
  public SegmentedTokens compact() {
    int[] f = flat;
    return f != null && (arrays.length != 1 || arrays[0] != f) ? of(f) : this;
  }

  /** The token ids as one array, assembled on the first call and kept (not a copy; do not modify). */
  public int[] toArray() {
    int[] f = flat;
    if (f == null) {
      f = new int[length()];
      copy(0, f, 0, f.length);
      flat = f;
    }
    return f;
  }

  /**
   * The token ids as one array without keeping it here: the array {@link #toArray()} assembled or
   * the one array given to {@link #of}, if there is one, else a new one each call. For a holder that
   * keeps the array itself when these tokens are shared with a prompt kept for a later turn (which
   * would otherwise hold them twice).
   */
  public int[] assembled() {
    int[] f = flat;
    if (f != null) {
      return f;
    }
    f = new int[length()];
    copy(0, f, 0, f.length);
    return f;
  }

  /**
   * Copies tokens {@code [from, from + count)} into {@code to} at {@code at}.
   *
   * @throws IndexOutOfBoundsException if either range is out of bounds
   */
  public void copy(int from, int[] to, int at, int count) {
    Objects.checkFromIndexSize(from, count, length());
    Objects.checkFromIndexSize(at, count, to.length);
    int[] f = flat;
    if (f != null) {
      System.arraycopy(f, from, to, at, count);
      return;
    }
    int s = segmentOf(from);
    while (count > 0) {
      int start = start(s);
      int n = Math.min(count, ends[s] - from);
      System.arraycopy(arrays[s], from - start, to, at, n);
      from += n;
      at += n;
      count -= n;
      s++;
    }
  }

  /**
   * The index of the segment that holds all of tokens {@code [from, from + count)} ({@code count >
   * 0}), or {@code -1} if they span two or more; with {@link #array} and {@link #start}, a page read
   * in place.
   */
  int segmentHolding(int from, int count) {
    int s = segmentOf(from);
    return from + count <= ends[s] ? s : -1;
  }

  /** The array of segment {@code s}: its tokens start at index 0. */
  int[] array(int s) {
    return arrays[s];
  }

  /** The prompt offset of segment {@code s}'s first token. */
  int start(int s) {
    return s == 0 ? 0 : ends[s - 1];
  }

  /** The segment of token {@code at} (below {@link #length()}): searched from the last, where new pages are. */
  private int segmentOf(int at) {
    int s = ends.length - 1;
    while (s > 0 && ends[s - 1] > at) {
      s--;
    }
    return s;
  }
}
