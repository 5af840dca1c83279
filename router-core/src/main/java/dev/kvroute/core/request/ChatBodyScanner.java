package dev.kvroute.core.request;

import static dev.kvroute.core.request.JsonStrings.BACKSLASHES;
import static dev.kvroute.core.request.JsonStrings.HIGHS;
import static dev.kvroute.core.request.JsonStrings.LONG_LE;
import static dev.kvroute.core.request.JsonStrings.ONES;
import static dev.kvroute.core.request.JsonStrings.QUOTES;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.TextNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Reads a chat-completions body of the common shape without Jackson's tokenizer, each message
 * string in one pass that finds its end, validates it (escapes, control characters, UTF-8) and
 * counts its code points, eight bytes at a time where the bytes are plain ASCII. It builds the same
 * {@link JsonRequestParser.Body} the Jackson path builds, or gives up ({@link #read} returns {@code
 * null}) and the caller reads the body with Jackson, which judges and words every error.
 *
 * <p>The common shape: a JSON object whose {@code messages} (once) is an array of message objects
 * whose {@code role} and {@code name} are strings and whose {@code content} is a string or null;
 * other message fields are skipped (validated, not kept), except {@code tool_calls} and {@code
 * function_call}, which give up. Other top-level fields become the trees Jackson would build:
 * strings, booleans, null and numbers here, objects and arrays by Jackson from their bytes. It gives
 * up on anything else: any syntax error, a field name with an escape or a non-ASCII byte, a string
 * that is not shortest-form UTF-8 (Jackson decodes some of those leniently; the Jackson path then
 * does as before), a number with more than 18 digits or a leading zero, nesting deeper than 64
 * levels. So what it accepts is valid JSON that Jackson reads to the same body.
 *
 * <p>Why one unit past 600 lines: it is one recursive-descent reader over one cursor ({@code i})
 * and one "last string" register; the value readers, the string scan and its hashing, and the
 * give-up rule share that state byte by byte, and split across classes they would hand the cursor
 * back and forth on every token of the hot path this class exists to make cheap.
 *
 * <p>Single use, not thread-safe.
 */
final class ChatBodyScanner {
  private static final int MAX_DEPTH = 64;
  private static final int MAX_NAME_BYTES = 1_000;
  private static final int MAX_NUMBER_BYTES = 100;
  private static final long SPACES = 0x2020202020202020L;
  /** The flags of a word's low seven bytes: a hash element's. */
  private static final long LOW7 = 0x0080808080808080L;
  private static final long M56 = (1L << 56) - 1;
  private static final int GROUP = 56;
  private static final byte[] MESSAGES = ascii("messages");
  private static final byte[] ROLE = ascii("role");
  private static final byte[] NAME = ascii("name");
  private static final byte[] CONTENT = ascii("content");
  private static final byte[] TOOL_CALLS = ascii("tool_calls");
  private static final byte[] FUNCTION_CALL = ascii("function_call");
  private static final TextNode[] COMMON_STRINGS = {
    TextNode.valueOf("user"), TextNode.valueOf("assistant"), TextNode.valueOf("system"),
    TextNode.valueOf("tool")
  };

  /** Thrown to give up; shared, without a stack trace, as giving up is not an error. */
  private static final class GiveUp extends Exception {
    private static final GiveUp INSTANCE = new GiveUp();

    private GiveUp() {
      super(null, null, false, false);
    }
  }

  private final byte[] b;
  private final int limit;
  private final int maxStringBytes;
  private int i;
  // the last string read by string(): content b[start, end), its flags and code points
  private int strStart;
  private int strEnd;
  private boolean strEscaped;
  private boolean strNonAscii;
  private int strCodePoints;
  /** The content's {@link TextHash} when {@link #hashedString} computed it, else null. */
  private TextHash strHash;
  /** The character (code point) the last escape read by {@link #escape} stands for. */
  private int escapedChar;

  private ChatBodyScanner(byte[] b, int offset, int length, int maxStringBytes) {
    this.b = b;
    this.i = offset;
    this.limit = offset + length;
    this.maxStringBytes = maxStringBytes;
  }

  /**
   * The body {@code bytes[offset, offset + length)} as {@link JsonRequestParser}'s Jackson path
   * reads it for a chat request, or {@code null} when it is not of the common shape (including
   * every malformed body).
   *
   * @param maxStringBytes the longest string content, in bytes, read here (longer ones give up)
   * @param hashTexts whether to compute each message content's {@link TextHash} in the same pass
   *     (else its {@link JsonRequestParser.Span#hash} is null, and the segment hashes it if asked)
   */
  static JsonRequestParser.Body read(
      byte[] bytes, int offset, int length, int maxStringBytes, boolean hashTexts) {
    try {
      return new ChatBodyScanner(bytes, offset, length, maxStringBytes).body(hashTexts);
    } catch (GiveUp e) {
      return null;
    }
  }

  /** {@link #read} with {@code hashTexts}: the form the equivalence tests use. */
  static JsonRequestParser.Body read(byte[] bytes, int offset, int length, int maxStringBytes) {
    return read(bytes, offset, length, maxStringBytes, true);
  }

  private JsonRequestParser.Body body(boolean hashTexts) throws GiveUp {
    JsonRequestParser.Body out = new JsonRequestParser.Body(b);
    ws();
    expect('{');
    ws();
    if (peek() == '}') {
      i++;
    } else {
      while (true) {
        int name = key();
        int nameEnd = strEnd;
        if (is(name, nameEnd, MESSAGES)) {
          if (out.messages != null || peek() != '[') {
            throw GiveUp.INSTANCE;
          }
          out.messages = messages(hashTexts ? out.hasher : null);
          out.root.set("messages", out.root.arrayNode());
        } else {
          String field = new String(b, name, nameEnd - name, StandardCharsets.ISO_8859_1);
          out.root.set(field, value());
        }
        if (!nextMember('}')) {
          break;
        }
      }
    }
    ws();
    if (i != limit) {
      throw GiveUp.INSTANCE;
    }
    return out;
  }

  /** After a member: true at a comma (and skips to the next key), false at {@code close}. */
  private boolean nextMember(char close) throws GiveUp {
    ws();
    int c = next();
    if (c == ',') {
      ws();
      return true;
    }
    if (c != close) {
      throw GiveUp.INSTANCE;
    }
    return false;
  }

  /** Reads {@code "name":} up to the value's first byte; the name is {@code b[return, strEnd)}. */
  private int key() throws GiveUp {
    if (peek() != '"') {
      throw GiveUp.INSTANCE;
    }
    string();
    if (strEscaped || strNonAscii || strEnd - strStart > MAX_NAME_BYTES) {
      throw GiveUp.INSTANCE;
    }
    int start = strStart;
    ws();
    expect(':');
    ws();
    return start;
  }

  private List<Object> messages(PolynomialHasher hasher) throws GiveUp {
    List<Object> out = new ArrayList<>();
    i++; // '['
    ws();
    if (peek() == ']') {
      i++;
      return out;
    }
    do {
      if (peek() != '{') {
        throw GiveUp.INSTANCE;
      }
      out.add(message(hasher));
    } while (nextMember(']'));
    return out;
  }

  private JsonRequestParser.Message message(PolynomialHasher hasher) throws GiveUp {
    JsonRequestParser.Message m = new JsonRequestParser.Message();
    m.start = i;
    i++; // '{'
    ws();
    if (peek() == '}') {
      i++;
      m.end = i;
      return m;
    }
    do {
      int name = key();
      int nameEnd = strEnd;
      if (is(name, nameEnd, CONTENT)) {
        if (peek() == '"') {
          if (hasher != null) {
            hashedString(hasher);
          } else {
            string();
          }
          m.contentSpan =
              new JsonRequestParser.Span(strStart, strEnd, strEscaped, strCodePoints, strHash);
          m.content = null;
        } else if (peek() == 'n') {
          literal("null");
          m.contentSpan = null;
          m.content = NullNode.getInstance();
        } else {
          throw GiveUp.INSTANCE;
        }
      } else if (is(name, nameEnd, ROLE)) {
        m.role = stringNode();
      } else if (is(name, nameEnd, NAME)) {
        m.name = stringNode();
      } else if (is(name, nameEnd, TOOL_CALLS) || is(name, nameEnd, FUNCTION_CALL)) {
        throw GiveUp.INSTANCE;
      } else {
        skip(1);
      }
    } while (nextMember('}'));
    m.end = i;
    return m;
  }

  /** A string value as the Jackson path's tree of it. */
  private TextNode stringNode() throws GiveUp {
    if (peek() != '"') {
      throw GiveUp.INSTANCE;
    }
    string();
    if (strEscaped || strNonAscii) {
      return TextNode.valueOf(JsonStrings.decode(b, strStart, strEnd));
    }
    int len = strEnd - strStart;
    for (TextNode common : COMMON_STRINGS) {
      String v = common.textValue();
      if (v.length() == len && sameAscii(v, strStart)) {
        return common;
      }
    }
    return TextNode.valueOf(new String(b, strStart, len, StandardCharsets.ISO_8859_1));
  }

  /** A top-level field's value as the tree the Jackson path builds for it. */
  private JsonNode value() throws GiveUp {
    int c = peek();
    switch (c) {
      case '"':
        return stringNode();
      case 't':
        literal("true");
        return BooleanNode.TRUE;
      case 'f':
        literal("false");
        return BooleanNode.FALSE;
      case 'n':
        literal("null");
        return NullNode.getInstance();
      case '{':
      case '[':
        int start = i;
        skip(1);
        try {
          return JsonRequestParser.MAPPER.readTree(b, start, i - start);
        } catch (IOException e) {
          throw GiveUp.INSTANCE;
        }
      default:
        return number();
    }
  }

  /** A JSON number as Jackson's tree of it: an int, long or double node. */
  private JsonNode number() throws GiveUp {
    int start = i;
    boolean negative = peek() == '-';
    if (negative) {
      i++;
    }
    int digits = i;
    if (peek() == '0') {
      i++;
      if (isDigit(peek())) {
        throw GiveUp.INSTANCE; // a leading zero: Jackson words the error
      }
    } else if (isDigit(peek())) {
      while (isDigit(peek())) {
        i++;
      }
    } else {
      throw GiveUp.INSTANCE;
    }
    int intEnd = i;
    boolean fraction = false;
    if (peek() == '.') {
      i++;
      fraction = true;
      requireDigits();
    }
    if (peek() == 'e' || peek() == 'E') {
      i++;
      fraction = true;
      if (peek() == '+' || peek() == '-') {
        i++;
      }
      requireDigits();
    }
    if (i - start > MAX_NUMBER_BYTES) {
      throw GiveUp.INSTANCE;
    }
    if (fraction) {
      double d = Double.parseDouble(new String(b, start, i - start, StandardCharsets.ISO_8859_1));
      if (Double.isInfinite(d)) {
        throw GiveUp.INSTANCE;
      }
      return DoubleNode.valueOf(d);
    }
    if (intEnd - digits > 18) {
      throw GiveUp.INSTANCE;
    }
    long v = 0;
    for (int k = digits; k < intEnd; k++) {
      v = v * 10 + (b[k] - '0');
    }
    v = negative ? -v : v;
    return v == (int) v ? IntNode.valueOf((int) v) : LongNode.valueOf(v);
  }

  private void requireDigits() throws GiveUp {
    if (!isDigit(peek())) {
      throw GiveUp.INSTANCE;
    }
    while (isDigit(peek())) {
      i++;
    }
  }

  private static boolean isDigit(int c) {
    return c >= '0' && c <= '9';
  }

  /** Skips and validates the value at {@code i}. */
  private void skip(int depth) throws GiveUp {
    if (depth > MAX_DEPTH) {
      throw GiveUp.INSTANCE;
    }
    switch (peek()) {
      case '"':
        string();
        return;
      case 't':
        literal("true");
        return;
      case 'f':
        literal("false");
        return;
      case 'n':
        literal("null");
        return;
      case '{':
        i++;
        ws();
        if (peek() == '}') {
          i++;
          return;
        }
        do {
          key();
          skip(depth + 1);
        } while (nextMember('}'));
        return;
      case '[':
        i++;
        ws();
        if (peek() == ']') {
          i++;
          return;
        }
        do {
          skip(depth + 1);
        } while (nextMember(']'));
        return;
      default:
        number();
    }
  }

  private void literal(String word) throws GiveUp {
    if (i + word.length() > limit) {
      throw GiveUp.INSTANCE;
    }
    for (int k = 0; k < word.length(); k++) {
      if (b[i + k] != word.charAt(k)) {
        throw GiveUp.INSTANCE;
      }
    }
    i += word.length();
    // Jackson reads "truex" or "true1" as one bad token; so must a literal end at a delimiter
    int c = peek();
    if (c != -1 && c != ',' && c != '}' && c != ']' && !isWhitespace(c)) {
      throw GiveUp.INSTANCE;
    }
  }

  /**
   * Reads the string whose opening quote is at {@code i}: sets its content span, flags and code
   * points (as {@link String#codePointCount} of the decoded text counts them) and moves past the
   * closing quote. Gives up on a raw control character, a bad escape, UTF-8 that is not
   * shortest-form, or no closing quote.
   */
  private void string() throws GiveUp {
    scan(i + 1, i + 1, false, 0, null, 0);
  }

  /**
   * As {@link #string}, and hashes the content as {@link TextHash} in the same pass ({@link
   * #strHash}): each 56-byte group of plain ASCII is checked and hashed from the same eight loads,
   * a group holding anything else is checked eight bytes at a time up to its first special byte,
   * byte by byte from there, and then hashed. From the first escape on, the hash is of the decoded
   * bytes, so the rest is scanned eight bytes at a time and each run between escapes is fed to the
   * hasher as the scan passes it (still in the cache), each escape as the character it stands for.
   */
  private void hashedString(PolynomialHasher h) throws GiveUp {
    int start = i + 1;
    int p = start; // checked up to here
    int g = start; // hashed up to here, in whole groups; g <= p
    int codePoints = 0;
    boolean nonAscii = false;
    long a = 0;
    long c = 0;
    while (true) {
      while (g == p && p + GROUP + 1 <= limit) {
        long w0 = (long) LONG_LE.get(b, p);
        long w1 = (long) LONG_LE.get(b, p + 7);
        long w2 = (long) LONG_LE.get(b, p + 14);
        long w3 = (long) LONG_LE.get(b, p + 21);
        long w4 = (long) LONG_LE.get(b, p + 28);
        long w5 = (long) LONG_LE.get(b, p + 35);
        long w6 = (long) LONG_LE.get(b, p + 42);
        long w7 = (long) LONG_LE.get(b, p + 49);
        long flags = special(w0) | special(w1) | special(w2) | special(w3) | special(w4)
            | special(w5) | special(w6);
        if (((flags & HIGHS) | (special(w7) & LOW7)) != 0) {
          break;
        }
        long e0 = w0 & M56;
        long e1 = w1 & M56;
        long e2 = w2 & M56;
        long e3 = w3 & M56;
        long e4 = w4 & M56;
        long e5 = w5 & M56;
        long e6 = w6 & M56;
        long e7 = w7 & M56;
        a = PolynomialHasher.stepA(a, e0, e1, e2, e3, e4, e5, e6, e7);
        c = PolynomialHasher.stepB(c, e0, e1, e2, e3, e4, e5, e6, e7);
        p += GROUP;
        g = p;
        codePoints += GROUP;
      }
      int stop = Math.min(limit, g + GROUP);
      while (p + 8 <= stop && (special((long) LONG_LE.get(b, p)) & HIGHS) == 0) {
        p += 8;
        codePoints += 8;
      }
      while (p < stop) {
        int x = b[p];
        if (x == '"') {
          h.resume(a, c, g - start);
          h.update(b, g, p - g);
          strHash = h.finish();
          if (p - start > maxStringBytes) {
            throw GiveUp.INSTANCE;
          }
          strStart = start;
          strEnd = p;
          strEscaped = false;
          strNonAscii = nonAscii;
          strCodePoints = codePoints;
          i = p + 1;
          return;
        } else if (x == '\\') {
          // the hash is of the decoded bytes: from here on, fed run by run as the scan goes
          h.resume(a, c, g - start);
          h.update(b, g, p - g);
          scan(start, p, nonAscii, codePoints, h, p);
          return;
        } else if (x < 0) {
          nonAscii = true;
          p = utf8(p, limit);
        } else if (x < 0x20) {
          throw GiveUp.INSTANCE;
        } else {
          p++;
        }
        codePoints++;
      }
      if (p >= limit) {
        throw GiveUp.INSTANCE;
      }
      // p >= g + 56 and p < limit: the group is whole and checked
      long e0 = (long) LONG_LE.get(b, g) & M56;
      long e1 = (long) LONG_LE.get(b, g + 7) & M56;
      long e2 = (long) LONG_LE.get(b, g + 14) & M56;
      long e3 = (long) LONG_LE.get(b, g + 21) & M56;
      long e4 = (long) LONG_LE.get(b, g + 28) & M56;
      long e5 = (long) LONG_LE.get(b, g + 35) & M56;
      long e6 = (long) LONG_LE.get(b, g + 42) & M56;
      long e7 = (long) LONG_LE.get(b, g + 49) & M56;
      a = PolynomialHasher.stepA(a, e0, e1, e2, e3, e4, e5, e6, e7);
      c = PolynomialHasher.stepB(c, e0, e1, e2, e3, e4, e5, e6, e7);
      g += GROUP;
    }
  }

  /**
   * Whether {@link #skipPlain} uses the Vector API ({@link VectorScan}): when the JVM resolved the
   * {@code jdk.incubator.vector} module, HotSpot's optimizing compiler (C2) will compile it, vectors
   * are at least 16 bytes wide, and the system property {@code kvroute.vectorScan} is not {@code
   * false}. Without C2 ({@code -Xint}, or {@code -XX:TieredStopAtLevel} below 4 with tiered
   * compilation) the API runs its Java fallback, about a hundred times slower than the portable
   * scan. Decided once, before {@code VectorScan} is loaded, so that a JVM without the module never
   * links it.
   */
  static final boolean VECTOR = vectorScanUsable();

  private static boolean vectorScanUsable() {
    if (!Boolean.parseBoolean(System.getProperty("kvroute.vectorScan", "true"))
        || ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()
        || !optimizingCompiler()) {
      return false;
    }
    try {
      return VectorScan.useful();
    } catch (LinkageError e) {
      return false;
    }
  }

  /**
   * Whether HotSpot's C2 compiles this JVM's hot code: not interpreted only ({@code java.vm.info}),
   * and tiered compilation off or allowed to level 4. False when the flags cannot be read (another
   * JVM, or no {@code jdk.management} module).
   */
  private static boolean optimizingCompiler() {
    if (System.getProperty("java.vm.info", "").contains("interpreted")) {
      return false;
    }
    try {
      com.sun.management.HotSpotDiagnosticMXBean hotspot = java.lang.management.ManagementFactory
          .getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
      return !Boolean.parseBoolean(hotspot.getVMOption("TieredCompilation").getValue())
          || Integer.parseInt(hotspot.getVMOption("TieredStopAtLevel").getValue()) >= 4;
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  /**
   * From {@code p}, whole steps of plain bytes (no quote, backslash, byte below 0x20 or above 0x7F):
   * returns the start of the first step holding a special byte, or where fewer than a step's bytes
   * are left before {@code end}. A step is a vector ({@link VectorScan}) or 32 bytes ({@link
   * #skipPlainSwar}).
   */
  static int skipPlain(byte[] b, int p, int end) {
    return VECTOR ? VectorScan.skipPlain(b, p, end) : skipPlainSwar(b, p, end);
  }

  /** {@link #skipPlain} without the Vector API: 32 bytes a step, four words sharing one branch. */
  static int skipPlainSwar(byte[] b, int p, int end) {
    while (p + 32 <= end) {
      long w0 = (long) LONG_LE.get(b, p);
      long w1 = (long) LONG_LE.get(b, p + 8);
      long w2 = (long) LONG_LE.get(b, p + 16);
      long w3 = (long) LONG_LE.get(b, p + 24);
      if (((special(w0) | special(w1) | special(w2) | special(w3)) & HIGHS) != 0) {
        return p;
      }
      p += 32;
    }
    return p;
  }

  /**
   * Flags in the high bits ({@link JsonStrings#HIGHS}) of {@code w}'s bytes: the result masked by
   * {@code HIGHS} is non-zero iff some byte is a quote, a backslash, below 0x20 or above 0x7F. The
   * lowest such byte's flag is always set and no byte below it is flagged (no borrow reaches a lane
   * from a plain lane below it); bytes above it may be flagged too, which an any-special test
   * ({@code != 0}, or masked to a word's low bytes) does not mind. A byte above 0x7F needs no test
   * of its own: minus 0x20 it keeps its high bit from 0xA0 up, and below 0xA0 it does after the
   * quote's xor and minus one. Seven operations where three exact zero-byte tests and a high-bit
   * test take about eighteen; the mask is left to the caller, so that four words share one.
   * ({@code ChatBodyScannerTest} puts every byte value at every position of a step.)
   */
  private static long special(long w) {
    return ((w ^ QUOTES) - ONES) | ((w ^ BACKSLASHES) - ONES) | (w - SPACES);
  }

  /**
   * The string scan of {@link #string} from {@code p}, the content starting at {@code start} and
   * {@code b[start, p)} already checked (holding {@code codePoints} code points). With a hasher
   * {@code h}, which holds the decoded content before {@code run}, it also hashes the rest ({@link
   * #strHash}); without, {@link #strHash} is null.
   */
  private void scan(int start, int p, boolean nonAscii, int codePoints, PolynomialHasher h, int run)
      throws GiveUp {
    int end = limit;
    boolean escaped = false;
    strHash = null;
    while (true) {
      // whole steps while they are plain (a vector or 32 bytes), then 8 bytes a step
      int q = skipPlain(b, p, end);
      codePoints += q - p;
      p = q;
      while (p + 8 <= end) {
        long w = (long) LONG_LE.get(b, p);
        if ((special(w) & HIGHS) != 0) {
          break;
        }
        p += 8;
        codePoints += 8;
      }
      int stop = Math.min(end, p + 8);
      while (p < stop) {
        int c = b[p];
        if (c == '"') {
          if (p - start > maxStringBytes) {
            throw GiveUp.INSTANCE;
          }
          if (h != null) {
            h.update(b, run, p - run);
            strHash = h.finish();
          }
          strStart = start;
          strEnd = p;
          strEscaped = escaped;
          strNonAscii = nonAscii;
          strCodePoints = codePoints;
          i = p + 1;
          return;
        } else if (c == '\\') {
          escaped = true;
          if (h != null) {
            h.update(b, run, p - run);
          }
          p = escape(p, end);
          if (h != null) {
            if (escapedChar < 0x80) {
              h.update(escapedChar);
            } else {
              h.updateCodePoint(escapedChar);
            }
            run = p;
          }
          codePoints++;
        } else if (c < 0) {
          nonAscii = true;
          p = utf8(p, end);
          codePoints++;
        } else if (c < 0x20) {
          throw GiveUp.INSTANCE;
        } else {
          p++;
          codePoints++;
        }
      }
      if (p >= end) {
        throw GiveUp.INSTANCE;
      }
    }
  }

  /**
   * Validates the escape at {@code b[p] == '\\'}; returns the index after it and leaves the
   * character it stands for in {@link #escapedChar}. A {@code \\u} high surrogate followed by a
   * {@code \\u} low surrogate is taken as one (one code point); a lone surrogate stands for itself,
   * as in {@link JsonStrings#hash}.
   */
  private int escape(int p, int end) throws GiveUp {
    if (p + 1 >= end) {
      throw GiveUp.INSTANCE;
    }
    switch (b[p + 1]) {
      case '"':
      case '\\':
      case '/':
        escapedChar = b[p + 1];
        return p + 2;
      case 'b':
        escapedChar = '\b';
        return p + 2;
      case 'f':
        escapedChar = '\f';
        return p + 2;
      case 'n':
        escapedChar = '\n';
        return p + 2;
      case 'r':
        escapedChar = '\r';
        return p + 2;
      case 't':
        escapedChar = '\t';
        return p + 2;
      case 'u':
        int unit = hex4(p + 2, end);
        escapedChar = unit;
        p += 6;
        if (Character.isHighSurrogate((char) unit)
            && p + 6 <= end
            && b[p] == '\\'
            && b[p + 1] == 'u') {
          int low = hex4(p + 2, end);
          if (Character.isLowSurrogate((char) low)) {
            escapedChar = Character.toCodePoint((char) unit, (char) low);
            p += 6;
          }
        }
        return p;
      default:
        throw GiveUp.INSTANCE;
    }
  }

  private int hex4(int at, int end) throws GiveUp {
    if (at + 4 > end) {
      throw GiveUp.INSTANCE;
    }
    int v = 0;
    for (int k = at; k < at + 4; k++) {
      int d = Character.digit(b[k], 16);
      if (d < 0 || b[k] < 0) {
        throw GiveUp.INSTANCE;
      }
      v = v << 4 | d;
    }
    return v;
  }

  /**
   * Validates the shortest-form UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
   * nothing above U+10FFFF) whose lead byte is at {@code p}; returns the index after it.
   */
  private int utf8(int p, int end) throws GiveUp {
    int c = b[p] & 0xFF;
    int n;
    int lo = 0x80;
    int hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) {
        lo = 0xA0;
      } else if (c == 0xED) {
        hi = 0x9F;
      }
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) {
        lo = 0x90;
      } else if (c == 0xF4) {
        hi = 0x8F;
      }
    } else {
      throw GiveUp.INSTANCE;
    }
    if (p + n > end) {
      throw GiveUp.INSTANCE;
    }
    int second = b[p + 1] & 0xFF;
    if (second < lo || second > hi) {
      throw GiveUp.INSTANCE;
    }
    for (int k = 2; k < n; k++) {
      if ((b[p + k] & 0xC0) != 0x80) {
        throw GiveUp.INSTANCE;
      }
    }
    return p + n;
  }

  private void ws() {
    while (i < limit && isWhitespace(b[i])) {
      i++;
    }
  }

  private static boolean isWhitespace(int c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
  }

  /** The byte at {@code i} (0 to 255), or -1 at the end. */
  private int peek() {
    return i < limit ? b[i] & 0xFF : -1;
  }

  private int next() throws GiveUp {
    if (i >= limit) {
      throw GiveUp.INSTANCE;
    }
    return b[i++];
  }

  private void expect(char c) throws GiveUp {
    if (next() != c) {
      throw GiveUp.INSTANCE;
    }
  }

  private boolean is(int start, int end, byte[] name) {
    if (end - start != name.length) {
      return false;
    }
    for (int k = 0; k < name.length; k++) {
      if (b[start + k] != name[k]) {
        return false;
      }
    }
    return true;
  }

  private boolean sameAscii(String s, int at) {
    for (int k = 0; k < s.length(); k++) {
      if (b[at + k] != s.charAt(k)) {
        return false;
      }
    }
    return true;
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }
}
