package dev.kvroute.core.request;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * JSON string contents read straight from UTF-8 body bytes: finding a string's end, hashing its
 * decoded text as {@link TextHash} without materialising it, and decoding it when the text is
 * needed. Eight bytes at a time where the bytes are plain ASCII.
 *
 * <p>Stateless and thread-safe.
 */
final class JsonStrings {
  /** {@link #scan} flag: the content holds a backslash escape. */
  static final long ESCAPED = 1L << 32;
  /** {@link #scan} flag: the content holds a byte of 0x80 or above. */
  static final long NON_ASCII = 1L << 33;

  private static final JsonFactory FACTORY = new JsonFactory();
  /** Eight bytes at a time, little-endian; with the masks below, shared with {@link ChatBodyScanner}. */
  static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  static final long ONES = 0x0101010101010101L;
  static final long HIGHS = 0x8080808080808080L;
  static final long QUOTES = 0x2222222222222222L;
  static final long BACKSLASHES = 0x5C5C5C5C5C5C5C5CL;

  private JsonStrings() {}

  /**
   * Finds the closing quote of the JSON string whose content starts at {@code from}, looking no
   * further than {@code limit}: its index (low 32 bits) with {@link #ESCAPED} and
   * {@link #NON_ASCII} flags, or {@code -1} if there is none before {@code limit}. Does not
   * validate; the JSON parser does.
   */
  static long scan(byte[] b, int from, int limit) {
    long flags = 0;
    int i = from;
    while (true) {
      while (i + 8 <= limit) {
        long w = (long) LONG_LE.get(b, i);
        if ((zeroByte(w ^ QUOTES) | zeroByte(w ^ BACKSLASHES) | (w & HIGHS)) != 0) {
          break;
        }
        i += 8;
      }
      int stop = Math.min(limit, i + 8);
      for (; i < stop; i++) {
        int c = b[i];
        if (c == '"') {
          return i | flags;
        } else if (c == '\\') {
          flags |= ESCAPED;
          i++; // the escaped byte; the hex digits of a \\u escape are never quotes or backslashes
        } else if (c < 0) {
          flags |= NON_ASCII;
        }
      }
      if (i >= limit) {
        return -1;
      }
    }
  }

  /** Non-zero iff some byte of {@code v} is zero (the classic bit trick; exact for "any"). */
  static long zeroByte(long v) {
    return (v - ONES) & ~v & HIGHS;
  }

  /**
   * The {@link TextHash} of the decoded content {@code b[start, end)} of a valid JSON string:
   * the bytes themselves when there is no escape, else the bytes with every escape replaced by the
   * UTF-8 form of the character it stands for ({@code \\uD83D\\uDE00} pairs combine into one code
   * point, as in {@link TextHash#of(String)}).
   */
  static TextHash hash(byte[] b, int start, int end, boolean escaped, PolynomialHasher h) {
    h.reset();
    if (!escaped) {
      h.update(b, start, end - start);
      return h.finish();
    }
    int run = start;
    int i = start;
    while (i < end) {
      i = nextBackslash(b, i, end);
      if (i >= end) {
        break;
      }
      h.update(b, run, i - run);
      byte c = b[i + 1];
      if (c == 'u') {
        int unit = hex4(b, i + 2);
        i += 6;
        if (Character.isHighSurrogate((char) unit)
            && i + 6 <= end
            && b[i] == '\\'
            && b[i + 1] == 'u'
            && Character.isLowSurrogate((char) hex4(b, i + 2))) {
          h.updateCodePoint(Character.toCodePoint((char) unit, (char) hex4(b, i + 2)));
          i += 6;
        } else {
          h.updateCodePoint(unit);
        }
      } else {
        h.update(unescape(c));
        i += 2;
      }
      run = i;
    }
    h.update(b, run, end - run);
    return h.finish();
  }

  /**
   * The number of code points of the decoded content {@code b[start, end)} of a valid JSON string,
   * as {@link String#codePointCount} of {@link #decode} gives it, without decoding: every UTF-8
   * lead byte is one, an escape is one ({@code \\uD83D\\uDE00} pairs count once, as they
   * combine).
   */
  static int codePoints(byte[] b, int start, int end, boolean escaped) {
    if (!escaped) {
      return leadBytes(b, start, end);
    }
    int n = 0;
    int run = start;
    int i = start;
    while (i < end) {
      i = nextBackslash(b, i, end);
      if (i >= end) {
        break;
      }
      n += leadBytes(b, run, i);
      if (b[i + 1] == 'u') {
        int unit = hex4(b, i + 2);
        i += 6;
        if (Character.isHighSurrogate((char) unit)
            && i + 6 <= end
            && b[i] == '\\'
            && b[i + 1] == 'u'
            && Character.isLowSurrogate((char) hex4(b, i + 2))) {
          i += 6;
        }
      } else {
        i += 2;
      }
      n++;
      run = i;
    }
    return n + leadBytes(b, run, end);
  }

  /** Bytes in {@code b[from, to)} that start a UTF-8 sequence (all but 10xxxxxx continuations). */
  private static int leadBytes(byte[] b, int from, int to) {
    int continuations = 0;
    int i = from;
    for (; i + 8 <= to; i += 8) {
      long w = (long) LONG_LE.get(b, i);
      // a continuation byte has bit 7 set and bit 6 clear
      continuations += Long.bitCount(w & ~(w << 1) & HIGHS);
    }
    for (; i < to; i++) {
      continuations += (b[i] & 0xC0) == 0x80 ? 1 : 0;
    }
    return (to - from) - continuations;
  }

  private static int nextBackslash(byte[] b, int i, int end) {
    while (i + 8 <= end) {
      if (zeroByte((long) LONG_LE.get(b, i) ^ BACKSLASHES) != 0) {
        break;
      }
      i += 8;
    }
    while (i < end && b[i] != '\\') {
      i++;
    }
    return i;
  }

  private static int unescape(byte c) {
    switch (c) {
      case 'b':
        return '\b';
      case 'f':
        return '\f';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      default:
        return c; // '"', '\\', '/'
    }
  }

  private static int hex4(byte[] b, int at) {
    return Character.digit(b[at], 16) << 12
        | Character.digit(b[at + 1], 16) << 8
        | Character.digit(b[at + 2], 16) << 4
        | Character.digit(b[at + 3], 16);
  }

  /** The decoded content {@code b[start, end)} of a valid JSON string, decoded by Jackson. */
  static String decode(byte[] b, int start, int end) {
    try (JsonParser p = FACTORY.createParser(b, start - 1, end - start + 2)) {
      p.nextToken();
      return p.getText();
    } catch (IOException e) {
      throw new IllegalStateException("request body changed after parsing: " + e.getMessage(), e);
    }
  }
}
