package dev.kvroute.core.request;

import static dev.kvroute.core.request.RequestParserEquivalenceTest.field;
import static dev.kvroute.core.request.RequestParserEquivalenceTest.object;
import static dev.kvroute.core.request.RequestParserEquivalenceTest.quote;
import static dev.kvroute.core.request.RequestParserEquivalenceTest.text;
import static dev.kvroute.core.request.RequestParserEquivalenceTest.ws;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ChatBodyScanner}, the one-pass reader of common chat bodies, against the Jackson path it
 * stands in for ({@link JsonRequestParser#readWithJackson}): on random bodies of the common shape it
 * must read every one, to the same body (every top-level tree, every message field, the message and
 * content offsets) with each content's code points counted as the decoded text's; on any other
 * body it reads the same body or gives up, and it gives up on every body Jackson refuses.
 */
class ChatBodyScannerTest {
  private static final int MAX_STRING = 20_000_000;
  private final JsonRequestParser parser = new JsonRequestParser("x-session-id", "user");

  /** A message of the common shape: string role, string or null content, name, other fields. */
  private static String message(SplittableRandom r) {
    List<String> f = new ArrayList<>();
    String[] roles = {"system", "user", "assistant", "tool", "developer", "critic é", "a\"b"};
    f.add(field("role", quote(roles[r.nextInt(roles.length)], r), r));
    if (r.nextInt(8) == 0) {
      f.add(field("content", "null", r));
    } else {
      f.add(field("content", quote(text(r), r), r));
    }
    if (r.nextInt(5) == 0) {
      f.add(field("name", quote(text(r), r), r));
    }
    if (r.nextInt(4) == 0) {
      f.add(field("tool_call_id", quote(text(r), r), r));
    }
    if (r.nextInt(5) == 0) {
      f.add(field("extra", "{\"n\":[1,-2.5e-3,0,true,false,null,{},[]],\"s\":"
          + quote(text(r), r) + ",\"deep\":[[[{\"x\":-0}]]]}", r));
    }
    if (r.nextInt(10) == 0 && f.size() > 1) {
      f.add(field("content", quote(text(r), r), r)); // a duplicate: the last one counts
    }
    return object(f, r);
  }

  private static final String[] NUMBERS = {
    "0", "-0", "7", "-12", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "123456789012345678", "-123456789012345678", "0.7", "-0.0", "1e5", "2.5E+2", "1E-3", "1e99",
    "3.141592653589793238", "0e0",
  };

  /** A chat body of the common shape, every top-level value kind, random whitespace. */
  static String hotBody(SplittableRandom r) {
    List<String> f = new ArrayList<>();
    List<String> messages = new ArrayList<>();
    int n = r.nextInt(7);
    for (int i = 0; i < n; i++) {
      messages.add(message(r));
    }
    f.add(field("messages", "[" + ws(r) + String.join("," + ws(r), messages) + ws(r) + "]", r));
    if (r.nextBoolean()) {
      f.add(field("model", quote("m-" + text(r), r), r));
    }
    if (r.nextBoolean()) {
      f.add(field("stream", new String[] {"true", "false", "null"}[r.nextInt(3)], r));
    }
    if (r.nextBoolean()) {
      f.add(field(r.nextBoolean() ? "max_tokens" : "max_completion_tokens",
          NUMBERS[r.nextInt(NUMBERS.length)], r));
    }
    if (r.nextBoolean()) {
      f.add(field("temperature", NUMBERS[r.nextInt(NUMBERS.length)], r));
    }
    if (r.nextBoolean()) {
      f.add(field("user", quote("u" + text(r), r), r));
    }
    if (r.nextInt(3) == 0) {
      f.add(field("stream_options", "{" + ws(r) + "\"include_usage\"" + ws(r) + ":" + ws(r)
          + "true}", r));
    }
    if (r.nextInt(3) == 0) {
      f.add(field("tools", "[{\"type\":\"function\",\"function\":{\"name\":"
          + quote(text(r), r) + ",\"parameters\":{\"a\":[1.5,null]}}}]", r));
    }
    if (r.nextInt(4) == 0) {
      f.add(field("stop", "[]", r));
    }
    return ws(r) + object(f, r) + ws(r);
  }

  @Test
  void commonBodiesAreReadAsJacksonReadsThem() throws Exception {
    SplittableRandom r = new SplittableRandom(18);
    for (int k = 0; k < 4_000; k++) {
      String json = hotBody(r);
      byte[] padded = ("xx" + json + "yy").getBytes(StandardCharsets.UTF_8);
      int length = padded.length - 4;
      JsonRequestParser.Body fast = ChatBodyScanner.read(padded, 2, length, MAX_STRING);
      assertThat(fast).as("gave up on %s", json).isNotNull();
      JsonRequestParser.Body slow =
          parser.readWithJackson(Endpoint.CHAT_COMPLETIONS, padded, 2, length);
      assertSameBody(fast, slow, json);
    }
  }

  /**
   * A parser made not to hash while parsing (for policies that read no prompt) leaves every
   * message's hash to the segment, and the segment's hash, text, code points and equality are those
   * of the hashing parser's segment, on the scanner's bodies and on bodies it leaves to Jackson.
   */
  @Test
  void aParserThatDoesNotHashWhileParsingGivesTheSameSegments() throws Exception {
    RequestParser hashing = RequestParser.create("x-session-id", "user", true);
    RequestParser lazy = RequestParser.create("x-session-id", "user", false);
    SplittableRandom r = new SplittableRandom(29);
    int compared = 0;
    for (int k = 0; k < 2_000; k++) {
      String json = k % 2 == 0 ? hotBody(r) : RequestParserEquivalenceTest.chatBody(r);
      byte[] body = json.getBytes(StandardCharsets.UTF_8);
      JsonRequestParser.Body scanned = ChatBodyScanner.read(body, 0, body.length, MAX_STRING, false);
      if (scanned != null) {
        for (Object o : scanned.messages) {
          if (o instanceof JsonRequestParser.Message m && m.contentSpan != null) {
            assertThat(m.contentSpan.hash()).as("hashed while reading: %s", json).isNull();
          }
        }
      }
      List<PromptSegment> want;
      try {
        want = hashing.parse(Endpoint.CHAT_COMPLETIONS, body, h -> null).segments();
      } catch (InvalidRequestException e) {
        continue; // the generator's odd bodies: errors are the equivalence tests' business
      }
      List<PromptSegment> got = lazy.parse(Endpoint.CHAT_COMPLETIONS, body, h -> null).segments();
      assertThat(got).as(json).hasSameSizeAs(want);
      for (int i = 0; i < want.size(); i++) {
        PromptSegment w = want.get(i);
        PromptSegment g = got.get(i);
        assertThat(g).as(json).isEqualTo(w);
        assertThat(g.textHash()).as(json).isEqualTo(w.textHash());
        assertThat(g.text()).as(json).isEqualTo(w.text());
        assertThat(g.codePointCount()).as(json).isEqualTo(w.codePointCount());
        if (w.text() != null) {
          assertThat(g.textHash()).as(json).isEqualTo(TextHash.of(w.text()));
        }
        compared++;
      }
    }
    assertThat(compared).isGreaterThan(4_000);
  }

  @Test
  void otherBodiesAreReadAsJacksonReadsThemOrLeftToJackson() {
    SplittableRandom r = new SplittableRandom(7);
    int read = 0;
    int refused = 0;
    for (int k = 0; k < 8_000; k++) {
      String base = k % 2 == 0 ? hotBody(r) : RequestParserEquivalenceTest.chatBody(r);
      String json = RequestParserEquivalenceTest.mutate(base, r);
      byte[] body = json.getBytes(StandardCharsets.UTF_8);
      JsonRequestParser.Body fast = ChatBodyScanner.read(body, 0, body.length, MAX_STRING);
      JsonRequestParser.Body slow;
      try {
        slow = parser.readWithJackson(Endpoint.CHAT_COMPLETIONS, body, 0, body.length);
      } catch (InvalidRequestException e) {
        assertThat(fast).as("read a body Jackson refuses (%s): %s", e.getMessage(), json).isNull();
        refused++;
        continue;
      }
      if (fast != null) {
        assertSameBody(fast, slow, json);
        read++;
      }
    }
    // both branches ran many times, so the test says something about each
    assertThat(read).isGreaterThan(500);
    assertThat(refused).isGreaterThan(500);
  }

  @Test
  void viewsOfCommonBodiesCountAndHashAsTheDecodedText() throws Exception {
    SplittableRandom r = new SplittableRandom(3);
    for (int k = 0; k < 1_000; k++) {
      String json = hotBody(r);
      byte[] body = json.getBytes(StandardCharsets.UTF_8);
      RequestView view;
      try {
        view = parser.parse(Endpoint.CHAT_COMPLETIONS, body, name -> null);
      } catch (InvalidRequestException e) {
        continue; // no messages, a negative max_tokens...: the errors are the Jackson path's
      }
      JsonRequestParser.Body slow =
          parser.readWithJackson(Endpoint.CHAT_COMPLETIONS, body, 0, body.length);
      assertThat(view.body().messageSpans()).as(json)
          .isEqualTo(JsonRequestParser.messageSpans(slow));
      for (PromptSegment s : view.segments()) {
        String t = s.text();
        assertThat(s.codePointCount()).as(json).isEqualTo(t.codePointCount(0, t.length()));
        assertThat(s.textHash()).as(json).isEqualTo(TextHash.of(t));
      }
    }
  }

  @Test
  void stringsThatAreNotShortestFormUtf8OrHoldControlBytesAreLeftToJackson() {
    byte[][] inserts = {
      {(byte) 0xC1, (byte) 0x81}, // overlong 'A', which Jackson decodes leniently
      {(byte) 0xE0, (byte) 0x81, (byte) 0x81},
      {(byte) 0xED, (byte) 0xA0, (byte) 0xBD}, // a surrogate
      {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80}, // above U+10FFFF
      {(byte) 0xF0, (byte) 0x8F, (byte) 0xBF, (byte) 0xBF}, // overlong 4-byte
      {(byte) 0xFF}, {(byte) 0xC3}, {(byte) 0x80}, {(byte) 0xE2, (byte) 0x82}, {0x01}, {0x1F},
      {'\\', 'x'}, {'\\', 'u', '1', '2', 'g', '4'}, {'\\'},
    };
    for (byte[] insert : inserts) {
      for (String pad : new String[] {"", "0123456789abcdef"}) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(("{\"messages\":[{\"role\":\"user\",\"content\":\"" + pad)
            .getBytes(StandardCharsets.UTF_8));
        out.writeBytes(insert);
        out.writeBytes((pad + "\"}]}").getBytes(StandardCharsets.UTF_8));
        byte[] body = out.toByteArray();
        assertThat(ChatBodyScanner.read(body, 0, body.length, MAX_STRING))
            .as("%s", java.util.Arrays.toString(insert)).isNull();
      }
    }
  }

  @Test
  void shapesOutsideTheCommonOneAreLeftToJackson() {
    String[] bodies = {
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}]}",
      "{\"messages\":[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]}]}",
      "{\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"function_call\":{}}]}",
      "{\"messages\":[{\"role\":1,\"content\":\"a\"}]}",
      "{\"messages\":[\"a\"]}",
      "{\"messages\":{}}",
      "{\"messages\":[],\"messages\":[]}",
      "{\"mess\\u0061ges\":[]}",
      "{\"messages\":[],\"max_tokens\":012}",
      "{\"messages\":[],\"max_tokens\":1234567890123456789}",
      "{\"messages\":[],\"t\":1e999}",
      "{\"messages\":[]}x",
      "{\"messages\":[],}",
      "{\"messages\":[] \"a\":1}",
      "[]",
      "",
    };
    for (String json : bodies) {
      byte[] body = json.getBytes(StandardCharsets.UTF_8);
      assertThat(ChatBodyScanner.read(body, 0, body.length, MAX_STRING)).as(json).isNull();
    }
  }

  @Test
  void aStringLongerThanTheLimitIsLeftToJackson() {
    byte[] body = "{\"messages\":[{\"role\":\"user\",\"content\":\"0123456789\"}]}"
        .getBytes(StandardCharsets.UTF_8);
    assertThat(ChatBodyScanner.read(body, 0, body.length, 10)).isNotNull();
    assertThat(ChatBodyScanner.read(body, 0, body.length, 9)).isNull();
  }

  @Test
  void everySpecialByteIsHandledAtEveryPositionOfAStepOrHashGroup() throws Exception {
    String[] specials = {
      "\\\"", "\\\\", "\\n", "\\u0041", "\\ud83d\\ude00", "\\ud83d", "\\ude00\\ud83d", "é", "😀",
      "日", "!", "#", "[", "]", "\u007f", " ", "\\/",
    };
    for (String special : specials) {
      // the eight-byte steps of a skipped string and the 56-byte hash groups of a content string
      for (int before = 0; before < 118; before++) {
        for (int after : new int[] {0, 1, 7, 8, 9, 27, 28, 29, 55, 56, 57, 60, 113}) {
          String json = "{\"messages\":[{\"role\":\"user\",\"content\":\""
              + "a".repeat(before) + special + "b".repeat(after) + "\",\"x\":\""
              + "c".repeat(before) + special + "\"}]}";
          byte[] body = json.getBytes(StandardCharsets.UTF_8);
          JsonRequestParser.Body fast = ChatBodyScanner.read(body, 0, body.length, MAX_STRING);
          assertThat(fast).as(json).isNotNull();
          assertSameBody(
              fast, parser.readWithJackson(Endpoint.CHAT_COMPLETIONS, body, 0, body.length), json);
        }
      }
    }
  }

  @Test
  void everyRawByteValueIsJudgedAtEveryPositionOfAStepOrHashGroup() throws Exception {
    // the word test for a special byte (quote, backslash, control, non-ASCII) borrows across
    // bytes: each value, alone among plain bytes, must be caught (or let through) wherever it falls
    for (int v = 0; v < 256; v++) {
      if (v == '"' || v == '\\') {
        continue;
      }
      for (int before = 0; before < 118; before++) {
        for (int after : new int[] {0, 1, 8, 29, 40, 57}) {
          ByteArrayOutputStream out = new ByteArrayOutputStream();
          out.writeBytes(("{\"messages\":[{\"role\":\"user\",\"content\":\"" + "a".repeat(before))
              .getBytes(StandardCharsets.UTF_8));
          out.write(v);
          out.writeBytes(("~".repeat(after) + "\",\"x\":\"" + "c".repeat(before))
              .getBytes(StandardCharsets.UTF_8));
          out.write(v);
          out.writeBytes(("}".repeat(after) + "\"}]}").getBytes(StandardCharsets.UTF_8));
          byte[] body = out.toByteArray();
          String what = "byte " + v + " after " + before + " plain bytes, " + after + " after it";
          for (boolean hash : new boolean[] {true, false}) {
            JsonRequestParser.Body fast =
                ChatBodyScanner.read(body, 0, body.length, MAX_STRING, hash);
            if (v < 0x20 || v > 0x7F) {
              // a raw control byte, or a lone byte of a multi-byte UTF-8 sequence: not plain JSON
              assertThat(fast).as(what).isNull();
            } else {
              assertThat(fast).as(what).isNotNull();
              if (hash) { // without, the spans carry no hash to compare
                assertSameBody(
                    fast, parser.readWithJackson(Endpoint.CHAT_COMPLETIONS, body, 0, body.length),
                    what);
              }
            }
          }
        }
      }
    }
  }

  private static void assertSameBody(
      JsonRequestParser.Body fast, JsonRequestParser.Body slow, String what) {
    assertThat(fast.root).as(what).isEqualTo(slow.root);
    if (slow.messages == null) {
      assertThat(fast.messages).as(what).isNull();
      return;
    }
    assertThat(fast.messages).as(what).hasSameSizeAs(slow.messages);
    for (int i = 0; i < slow.messages.size(); i++) {
      JsonRequestParser.Message s = (JsonRequestParser.Message) slow.messages.get(i);
      JsonRequestParser.Message f = (JsonRequestParser.Message) fast.messages.get(i);
      assertThat(f.role).as(what).isEqualTo(s.role);
      assertThat(f.name).as(what).isEqualTo(s.name);
      assertThat(f.content).as(what).isEqualTo(s.content);
      assertThat(f.toolCalls).as(what).isEqualTo(s.toolCalls);
      assertThat(f.functionCall).as(what).isEqualTo(s.functionCall);
      assertThat(f.start).as(what).isEqualTo(s.start);
      assertThat(f.end).as(what).isEqualTo(s.end);
      if (s.contentSpan == null) {
        assertThat(f.contentSpan).as(what).isNull();
      } else {
        JsonRequestParser.Span fs = f.contentSpan;
        assertThat(fs.start()).as(what).isEqualTo(s.contentSpan.start());
        assertThat(fs.end()).as(what).isEqualTo(s.contentSpan.end());
        assertThat(fs.escaped()).as(what).isEqualTo(s.contentSpan.escaped());
        String text = JsonStrings.decode(fast.bytes, fs.start(), fs.end());
        assertThat(fs.codePoints()).as(what).isEqualTo(text.codePointCount(0, text.length()));
        assertThat(fs.hash()).as(what).isEqualTo(TextHash.of(text));
      }
    }
  }

  /**
   * Both versions of the scan's skip over plain bytes ({@link ChatBodyScanner#skipPlain}), on every
   * byte value at every position of 96-byte buffers, from every start: no special byte is skipped,
   * and the skip stops only at a step holding one or with less than a step left. The vector version
   * is tested when this JVM has the module (the build runs the tests with it), and {@link
   * ChatBodyScanner#VECTOR} is checked against the module and {@code kvroute.vectorScan}.
   */
  @Test
  void theSkipOverPlainBytesStopsAtTheStepHoldingTheFirstSpecialByte() {
    // the build runs the tests with the module (and once more with -Dkvroute.vectorScan=false);
    // a JVM started without it (an IDE) tests the portable skip alone
    boolean module = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
    boolean wanted = Boolean.parseBoolean(System.getProperty("kvroute.vectorScan", "true"));
    assertThat(ChatBodyScanner.VECTOR).as("module %s, vectorScan %s", module, wanted).isEqualTo(module && wanted);
    byte[] b = new byte[96];
    for (int v = 0; v < 256; v++) {
      for (int at = 0; at < b.length; at++) {
        java.util.Arrays.fill(b, (byte) 'a');
        b[at] = (byte) v;
        for (int from = 0; from <= 40; from += 5) {
          checkSkip(b, from, 32, ChatBodyScanner.skipPlainSwar(b, from, b.length));
          if (module) {
            checkSkip(b, from, VectorScan.step(), VectorScan.skipPlain(b, from, b.length));
          }
        }
      }
    }
    // the ends of a buffer: the last bytes before the end are left to the caller
    SplittableRandom r = new SplittableRandom(7);
    for (int n = 0; n < 2_000; n++) {
      byte[] x = new byte[r.nextInt(200)];
      for (int i = 0; i < x.length; i++) {
        x[i] = (byte) (r.nextInt(40) == 0 ? r.nextInt(256) : 'a' + r.nextInt(26));
      }
      int from = x.length == 0 ? 0 : r.nextInt(x.length);
      int end = from + r.nextInt(x.length - from + 1);
      checkSkip(x, from, end, 32, ChatBodyScanner.skipPlainSwar(x, from, end));
      if (module) {
        checkSkip(x, from, end, VectorScan.step(), VectorScan.skipPlain(x, from, end));
      }
    }
  }

  private static void checkSkip(byte[] b, int from, int step, int stop) {
    checkSkip(b, from, b.length, step, stop);
  }

  private static void checkSkip(byte[] b, int from, int end, int step, int stop) {
    assertThat(stop).isBetween(from, end);
    assertThat((stop - from) % step).isZero();
    for (int i = from; i < stop; i++) {
      assertThat(isSpecial(b[i])).as("byte %d (0x%02x) skipped from %d", i, b[i] & 0xFF, from).isFalse();
    }
    if (stop + step <= end) {
      boolean any = false;
      for (int i = stop; i < stop + step; i++) {
        any |= isSpecial(b[i]);
      }
      assertThat(any).as("stopped at %d from %d with a plain step ahead", stop, from).isTrue();
    }
  }

  private static boolean isSpecial(byte x) {
    int v = x & 0xFF;
    return v == '"' || v == '\\' || v < 0x20 || v > 0x7F;
  }
}
