package dev.kvroute.core.request;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.kvroute.core.request.JsonRequestParser.Body;
import dev.kvroute.core.request.JsonRequestParser.Message;
import dev.kvroute.core.request.JsonRequestParser.Span;
import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The fast path of {@link JsonRequestParser}: one pass over the body's bytes that checks strict
 * JSON (RFC 8259 in UTF-8, shortest-form), leaves the prompt strings in the body as {@link Span}s
 * (eight bytes per step where they are plain ASCII), builds string, boolean and null values
 * directly, and hands only numbers, objects and arrays that routing reads to Jackson.
 *
 * <p>It accepts only documents Jackson accepts and builds the same {@link Body} as the Jackson
 * path. It declines ({@code null}) everything else, leaving Jackson to read the body and word the
 * error: malformed JSON, a non-object root, another encoding or a byte-order mark, an escaped field
 * name, nesting deeper than {@value #MAX_DEPTH}, a number longer than {@value #MAX_NUMBER_CHARS}
 * characters, a field name longer than {@value #MAX_NAME_BYTES} bytes, a string longer than Jackson's
 * limit, or UTF-8 that is not in shortest form (which Jackson may decode leniently).
 *
 * <p>Not thread-safe; one instance reads one body.
 */
final class FastJsonReader {
  static final int MAX_DEPTH = 64;
  static final int MAX_NUMBER_CHARS = 100;
  static final int MAX_NAME_BYTES = 1_000;

  private static final VarHandle LONG_LE =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long ONES = 0x0101010101010101L;
  private static final long HIGHS = 0x8080808080808080L;
  private static final long BACKSLASHES = 0x5C5C5C5C5C5C5C5CL;
  private static final long TWOS = 0x0202020202020202L;
  private static final long BANGS = 0x2121212121212121L;

  private static final TextNode EMPTY = TextNode.valueOf("");
  private static final TextNode[] COMMON_ROLES = {
    TextNode.valueOf("system"),
    TextNode.valueOf("user"),
    TextNode.valueOf("assistant"),
    TextNode.valueOf("tool"),
    TextNode.valueOf("developer"),
  };

  /** Thrown to decline; carries no stack trace. */
  private static final class Decline extends Exception {
    private static final long serialVersionUID = 1L;
    static final Decline INSTANCE = new Decline();

    private Decline() {
      super("declined", null, false, false);
    }
  }

  private final ObjectMapper mapper;
  private final byte[] b;
  private final int end;
  private final int maxStringBytes;
  private int i;
  /** Set by {@link #string()}: the last string's content end and flags. */
  private int stringEnd;

  private boolean stringEscaped;
  private boolean stringAscii;

  private FastJsonReader(ObjectMapper mapper, byte[] b, int offset, int length) {
    this.mapper = mapper;
    this.b = b;
    this.i = offset;
    this.end = offset + length;
    this.maxStringBytes = mapper.getFactory().streamReadConstraints().getMaxStringLength();
  }

  /**
   * The body read the way {@link JsonRequestParser}'s Jackson path reads it, or {@code null} when
   * the fast path declines.
   *
   * @param promptField the top-level field whose string value is the prompt ({@code prompt},
   *     {@code text}), or {@code null}
   */
  static Body read(
      ObjectMapper mapper,
      Endpoint endpoint,
      byte[] body,
      int offset,
      int length,
      String promptField) {
    if (offset < 0 || length < 0 || offset + length > body.length || offset + length < 0) {
      return null;
    }
    try {
      return new FastJsonReader(mapper, body, offset, length).root(endpoint, promptField);
    } catch (Decline | IOException | RuntimeException e) {
      return null;
    }
  }

  private Body root(Endpoint endpoint, String promptField) throws Decline, IOException {
    Body out = new Body(b);
    ws();
    expect('{');
    ws();
    if (peek() == '}') {
      i++;
    } else {
      while (true) {
        String field = name();
        ws();
        expect(':');
        ws();
        int c = peek();
        if (endpoint == Endpoint.CHAT_COMPLETIONS && c == '[' && field.equals("messages")) {
          out.messages = messages();
          out.root.set(field, out.root.arrayNode());
        } else if (c == '"' && field.equals(promptField)) {
          out.prompt = span();
          out.root.set(field, EMPTY);
        } else {
          if (field.equals("messages")) {
            out.messages = null;
          } else if (field.equals(promptField)) {
            out.prompt = null;
          }
          out.root.set(field, value(1));
        }
        ws();
        if (next() == '}') {
          break;
        }
        if (b[i - 1] != ',') {
          throw Decline.INSTANCE;
        }
        ws();
      }
    }
    ws();
    if (i != end) {
      throw Decline.INSTANCE;
    }
    return out;
  }

  private List<Object> messages() throws Decline, IOException {
    List<Object> out = new ArrayList<>();
    expect('[');
    ws();
    if (peek() == ']') {
      i++;
      return out;
    }
    while (true) {
      if (peek() == '{') {
        out.add(message());
      } else {
        out.add(value(2));
      }
      ws();
      if (next() == ']') {
        return out;
      }
      if (b[i - 1] != ',') {
        throw Decline.INSTANCE;
      }
      ws();
    }
  }

  private Message message() throws Decline, IOException {
    Message m = new Message();
    expect('{');
    ws();
    if (peek() == '}') {
      i++;
      return m;
    }
    while (true) {
      expect('"');
      int start = i;
      string();
      if (stringEscaped || stringEnd - start > MAX_NAME_BYTES) {
        throw Decline.INSTANCE;
      }
      int len = stringEnd - start;
      ws();
      expect(':');
      ws();
      if (is(start, len, "content")) {
        if (peek() == '"') {
          m.contentSpan = span();
          m.content = null;
        } else {
          m.contentSpan = null;
          m.content = value(3);
        }
      } else if (is(start, len, "role")) {
        m.role = role();
      } else if (is(start, len, "name")) {
        m.name = value(3);
      } else if (is(start, len, "tool_calls")) {
        m.toolCalls = value(3);
      } else if (is(start, len, "function_call")) {
        m.functionCall = value(3);
      } else {
        skip(3);
      }
      ws();
      if (next() == '}') {
        return m;
      }
      if (b[i - 1] != ',') {
        throw Decline.INSTANCE;
      }
      ws();
    }
  }

  /** A role value; the common roles without allocating. */
  private JsonNode role() throws Decline, IOException {
    if (peek() != '"') {
      return value(3);
    }
    i++;
    int start = i;
    string();
    if (!stringEscaped) {
      int len = stringEnd - start;
      for (TextNode r : COMMON_ROLES) {
        if (is(start, len, r.textValue())) {
          return r;
        }
      }
    }
    return text(start);
  }

  /** Whether {@code b[start, start + len)} is the ASCII {@code s}. */
  private boolean is(int start, int len, String s) {
    if (len != s.length()) {
      return false;
    }
    for (int k = 0; k < len; k++) {
      if (b[start + k] != s.charAt(k)) {
        return false;
      }
    }
    return true;
  }

  /** A field name at the current quote, as a String; escaped or long names decline. */
  private String name() throws Decline {
    expect('"');
    int start = i;
    string();
    if (stringEscaped || !stringAscii || stringEnd - start > MAX_NAME_BYTES) {
      throw Decline.INSTANCE;
    }
    return new String(b, start, stringEnd - start, StandardCharsets.ISO_8859_1);
  }

  /** The string at the current quote as a {@link Span}. */
  private Span span() throws Decline {
    expect('"');
    int start = i;
    string();
    return new Span(start, stringEnd, stringEscaped);
  }

  /** A value as a Jackson node: strings, booleans and null built here, the rest by Jackson. */
  private JsonNode value(int depth) throws Decline, IOException {
    int c = peek();
    switch (c) {
      case '"':
        i++;
        int start = i;
        string();
        return text(start);
      case 't':
        literal("true");
        return BooleanNode.TRUE;
      case 'f':
        literal("false");
        return BooleanNode.FALSE;
      case 'n':
        literal("null");
        return NullNode.instance;
      default:
        int from = i;
        skip(depth);
        JsonNode node = mapper.readTree(b, from, i - from);
        if (node == null || node.isMissingNode()) {
          throw Decline.INSTANCE;
        }
        return node;
    }
  }

  /** The string whose content starts at {@code start} and ended at the last {@link #string()}. */
  private TextNode text(int start) {
    if (!stringEscaped && stringAscii) {
      return TextNode.valueOf(
          new String(b, start, stringEnd - start, StandardCharsets.ISO_8859_1));
    }
    return TextNode.valueOf(JsonStrings.decode(b, start, stringEnd));
  }

  /** Checks and passes over one value. */
  private void skip(int depth) throws Decline {
    if (depth > MAX_DEPTH) {
      throw Decline.INSTANCE;
    }
    int c = peek();
    switch (c) {
      case '"':
        i++;
        string();
        return;
      case '{':
        i++;
        ws();
        if (peek() == '}') {
          i++;
          return;
        }
        while (true) {
          name();
          ws();
          expect(':');
          ws();
          skip(depth + 1);
          ws();
          if (next() == '}') {
            return;
          }
          if (b[i - 1] != ',') {
            throw Decline.INSTANCE;
          }
          ws();
        }
      case '[':
        i++;
        ws();
        if (peek() == ']') {
          i++;
          return;
        }
        while (true) {
          skip(depth + 1);
          ws();
          if (next() == ']') {
            return;
          }
          if (b[i - 1] != ',') {
            throw Decline.INSTANCE;
          }
          ws();
        }
      case 't':
        literal("true");
        return;
      case 'f':
        literal("false");
        return;
      case 'n':
        literal("null");
        return;
      default:
        number();
    }
  }

  /** {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?}, at most MAX_NUMBER_CHARS long. */
  private void number() throws Decline {
    int start = i;
    if (peek() == '-') {
      i++;
    }
    int c = peek();
    if (c == '0') {
      i++;
    } else if (c >= '1' && c <= '9') {
      digits();
    } else {
      throw Decline.INSTANCE;
    }
    if (i < end && b[i] == '.') {
      i++;
      if (!isDigit(peek())) {
        throw Decline.INSTANCE;
      }
      digits();
    }
    if (i < end && (b[i] == 'e' || b[i] == 'E')) {
      i++;
      if (i < end && (b[i] == '+' || b[i] == '-')) {
        i++;
      }
      if (!isDigit(peek())) {
        throw Decline.INSTANCE;
      }
      digits();
    }
    if (i - start > MAX_NUMBER_CHARS) {
      throw Decline.INSTANCE;
    }
    // A number must end at a structural character or whitespace (no "1x", "01").
    if (i < end && !isDelimiter(b[i])) {
      throw Decline.INSTANCE;
    }
  }

  private void digits() {
    while (i < end && isDigit(b[i])) {
      i++;
    }
  }

  private static boolean isDigit(int c) {
    return c >= '0' && c <= '9';
  }

  private static boolean isDelimiter(int c) {
    return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
  }

  private void literal(String word) throws Decline {
    if (end - i < word.length() || !is(i, word.length(), word)) {
      throw Decline.INSTANCE;
    }
    i += word.length();
    if (i < end && !isDelimiter(b[i])) {
      throw Decline.INSTANCE;
    }
  }

  /**
   * Checks and passes over a string's content from {@link #i} (just after its opening quote) to
   * just after its closing quote; sets {@link #stringEnd}, {@link #stringEscaped} and
   * {@link #stringAscii}. Declines on a raw control character, an invalid escape, UTF-8 that is
   * invalid or not in shortest form, a missing closing quote, or more than Jackson's limit of bytes.
   */
  private void string() throws Decline {
    int start = i;
    boolean escaped = false;
    boolean ascii = true;
    int p = i;
    while (true) {
      while (p + 8 <= end) {
        long w = (long) LONG_LE.get(b, p);
        // x ^ 0x02 is below 0x21 exactly for control characters and '"' (0x22 -> 0x20).
        long q = w ^ TWOS;
        long s = w ^ BACKSLASHES;
        long special = ((q - BANGS) & ~q | (s - ONES) & ~s | w) & HIGHS;
        if (special != 0) {
          p += Long.numberOfTrailingZeros(special) >>> 3; // the lowest flag is exact
          break;
        }
        p += 8;
      }
      if (p >= end) {
        throw Decline.INSTANCE;
      }
      int c = b[p];
      if (c == '"') {
        break;
      } else if (c == '\\') {
        escaped = true;
        p = escape(p + 1);
      } else if (c < 0) {
        ascii = false;
        p = utf8(p);
      } else if (c < 0x20) {
        throw Decline.INSTANCE;
      } else {
        p++;
      }
    }
    if (p - start > maxStringBytes) {
      throw Decline.INSTANCE;
    }
    stringEnd = p;
    stringEscaped = escaped;
    stringAscii = ascii;
    i = p + 1;
  }

  /** Checks the escape whose letter is at {@code p}; returns the index after it. */
  private int escape(int p) throws Decline {
    if (p >= end) {
      throw Decline.INSTANCE;
    }
    switch (b[p]) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        return p + 1;
      case 'u':
        if (p + 5 > end) {
          throw Decline.INSTANCE;
        }
        for (int k = 1; k <= 4; k++) {
          if (Character.digit(b[p + k], 16) < 0) {
            throw Decline.INSTANCE;
          }
        }
        return p + 5;
      default:
        throw Decline.INSTANCE;
    }
  }

  /** Checks the shortest-form UTF-8 sequence (no surrogates) at {@code p}; returns its end. */
  private int utf8(int p) throws Decline {
    int c = b[p] & 0xFF;
    int n;
    int min2 = 0x80;
    int max2 = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) {
        min2 = 0xA0;
      } else if (c == 0xED) {
        max2 = 0x9F;
      }
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) {
        min2 = 0x90;
      } else if (c == 0xF4) {
        max2 = 0x8F;
      }
    } else {
      throw Decline.INSTANCE;
    }
    if (p + n >= end) {
      throw Decline.INSTANCE;
    }
    int c2 = b[p + 1] & 0xFF;
    if (c2 < min2 || c2 > max2) {
      throw Decline.INSTANCE;
    }
    for (int k = 2; k <= n; k++) {
      if ((b[p + k] & 0xC0) != 0x80) {
        throw Decline.INSTANCE;
      }
    }
    return p + n + 1;
  }

  private void ws() {
    while (i < end) {
      byte c = b[i];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
        return;
      }
      i++;
    }
  }

  private int peek() throws Decline {
    if (i >= end) {
      throw Decline.INSTANCE;
    }
    return b[i];
  }

  private int next() throws Decline {
    int c = peek();
    i++;
    return c;
  }

  private void expect(char c) throws Decline {
    if (next() != c) {
      throw Decline.INSTANCE;
    }
  }
}
