package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The streaming parser against the whole-tree parser it replaced, on random bodies with random escaping and on mutations of them: the same views (texts
 * compared after decoding), the same errors, and segment hashes equal to the hash of the decoded
 * text.
 */
class RequestParserEquivalenceTest {
  private static final Function<String, String> NO_HEADERS = name -> null;
  private final RequestParser streaming = new JsonRequestParser("x-session-id", "user");
  private final RequestParser reference = new TreeRequestParser("x-session-id", "user");

  private static final String[] WORDS = {
    "hello", " world", " the", "é", "日本", "😀", "\"", "\\", "/", "\n", "\t", "\u0001", "\u007f",
    "<tool_call>", " ", "{", "}", "\ud800", "\udfff", "a\u2028b", "1e5", "null",
  };

  /** A random text, sometimes with quotes, escapes, non-ASCII and lone surrogates. */
  static String text(SplittableRandom r) {
    StringBuilder sb = new StringBuilder();
    int n = r.nextInt(12);
    for (int i = 0; i < n; i++) {
      sb.append(r.nextInt(3) == 0 ? WORDS[r.nextInt(WORDS.length)] : "word" + r.nextInt(100));
    }
    if (r.nextInt(20) == 0) {
      sb.append("x".repeat(r.nextInt(3_000))); // long enough for the 8-byte steps
    }
    return sb.toString();
  }

  /** {@code s} as a JSON string literal, each character escaped or not at random. */
  static String quote(String s, SplittableRandom r) {
    StringBuilder sb = new StringBuilder("\"");
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean pair =
          Character.isHighSurrogate(c)
              && i + 1 < s.length()
              && Character.isLowSurrogate(s.charAt(i + 1));
      if (pair) {
        if (r.nextInt(3) == 0) {
          sb.append(String.format("\\u%04x\\u%04X", (int) c, (int) s.charAt(i + 1)));
        } else {
          sb.append(c).append(s.charAt(i + 1));
        }
        i++;
      } else if (Character.isSurrogate(c) || c < 0x20 || r.nextInt(15) == 0) {
        String shortForm = shortEscape(c);
        sb.append(shortForm != null && r.nextBoolean() ? shortForm : String.format("\\u%04x", (int) c));
      } else if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c == '/' && r.nextBoolean()) {
        sb.append("\\/");
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }

  private static String shortEscape(char c) {
    switch (c) {
      case '"':
        return "\\\"";
      case '\\':
        return "\\\\";
      case '\n':
        return "\\n";
      case '\t':
        return "\\t";
      case '\r':
        return "\\r";
      case '\b':
        return "\\b";
      case '\f':
        return "\\f";
      default:
        return null;
    }
  }

  static String ws(SplittableRandom r) {
    return r.nextInt(4) == 0 ? new String[] {" ", "\n", "\t ", "\r\n  "}[r.nextInt(4)] : "";
  }

  static String object(List<String> fields, SplittableRandom r) {
    java.util.Collections.shuffle(fields, new java.util.Random(r.nextLong()));
    return "{" + ws(r) + String.join("," + ws(r), fields) + ws(r) + "}";
  }

  static String field(String name, String value, SplittableRandom r) {
    return "\"" + name + "\"" + ws(r) + ":" + ws(r) + value;
  }

  private static String message(SplittableRandom r) {
    List<String> f = new ArrayList<>();
    String[] roles = {"system", "user", "assistant", "tool", "developer", "critic é"};
    f.add(field("role", quote(roles[r.nextInt(roles.length)], r), r));
    int content = r.nextInt(10);
    if (content < 6) {
      f.add(field("content", quote(text(r), r), r));
    } else if (content == 6) {
      f.add(field("content", "null", r));
    } else if (content == 7) {
      f.add(field("content", "[" + ws(r) + object(new ArrayList<>(List.of(
          field("type", "\"text\"", r), field("text", quote(text(r), r), r))), r) + ","
          + object(new ArrayList<>(List.of(field("type", "\"image_url\"", r),
              field("image_url", "{\"url\":" + quote("https://x/" + text(r), r) + "}", r))), r)
          + "]", r));
    }
    if (r.nextInt(6) == 0) {
      f.add(field("name", quote(text(r), r), r));
    }
    if (r.nextInt(6) == 0) {
      f.add(field("tool_calls", "[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
          + quote("f" + r.nextInt(9), r) + ",\"arguments\":" + quote("{\"a\": 1}", r) + "}}]", r));
    }
    if (r.nextInt(4) == 0) {
      f.add(field("tool_call_id", quote(text(r), r), r));
    }
    if (r.nextInt(5) == 0) {
      f.add(field("extra", "{\"n\":[1,-2.5e-3,0,true,false,null,{}],\"s\":" + quote(text(r), r) + "}", r));
    }
    return object(f, r);
  }

  static String chatBody(SplittableRandom r) {
    List<String> f = new ArrayList<>();
    List<String> messages = new ArrayList<>();
    int n = 1 + r.nextInt(6);
    for (int i = 0; i < n; i++) {
      messages.add(message(r));
    }
    f.add(field("messages", "[" + ws(r) + String.join("," + ws(r), messages) + ws(r) + "]", r));
    if (r.nextBoolean()) {
      f.add(field("model", quote("m-" + text(r), r), r));
    }
    if (r.nextBoolean()) {
      f.add(field("stream", r.nextBoolean() ? "true" : "false", r));
    }
    if (r.nextBoolean()) {
      f.add(field(r.nextBoolean() ? "max_tokens" : "max_completion_tokens",
          r.nextInt(5) == 0 ? "16.0" : Integer.toString(r.nextInt(1000)), r));
    }
    if (r.nextBoolean()) {
      f.add(field("user", quote("u" + text(r), r), r));
    }
    if (r.nextInt(3) == 0) {
      f.add(field("tools", "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}]", r));
    }
    if (r.nextInt(3) == 0) {
      f.add(field("temperature", "0.7", r));
    }
    if (r.nextInt(3) == 0) { // valid and invalid priorities and n (both parsers must refuse the same)
      String[] values = {"0", "-2", "1.5", "\"x\"", "true", "null", "1e99", "20000", "[1]"};
      f.add(field(r.nextBoolean() ? "priority" : "n", values[r.nextInt(values.length)], r));
    }
    return object(f, r);
  }

  private static String completionBody(SplittableRandom r, String promptField) {
    List<String> f = new ArrayList<>();
    int shape = r.nextInt(4);
    String prompt =
        shape == 0 ? "[1,2,3]" : shape == 1 ? "[" + quote(text(r), r) + "," + quote("b", r) + "]" : quote(text(r), r);
    f.add(field(promptField, prompt, r));
    if (r.nextBoolean()) {
      f.add(field("max_tokens", Integer.toString(r.nextInt(100)), r));
    }
    if (r.nextBoolean()) {
      f.add(field("sampling_params", "{\"max_new_tokens\":" + r.nextInt(9) + "}", r));
    }
    return object(f, r);
  }

  private static final String MUTATIONS = "{}[],:\"\\ 0a-.e\u00e9";

  static String mutate(String body, SplittableRandom r) {
    int at = r.nextInt(body.length() + 1);
    switch (r.nextInt(4)) {
      case 0:
        return body.substring(0, at);
      case 1:
        return at < body.length() ? body.substring(0, at) + body.substring(at + 1) : body + "}";
      case 2:
        return body.substring(0, at) + MUTATIONS.charAt(r.nextInt(MUTATIONS.length()))
            + body.substring(at);
      default:
        return body + ws(r) + new String[] {"{}", "x", "1", "\"s\"", ""}[r.nextInt(5)];
    }
  }

  @Test
  void randomBodiesGiveTheSameViewsAsTheTreeParser() throws Exception {
    SplittableRandom r = new SplittableRandom(2024);
    for (int n = 0; n < 3_000; n++) {
      Endpoint endpoint = Endpoint.values()[n % 3];
      String json =
          endpoint == Endpoint.CHAT_COMPLETIONS
              ? chatBody(r)
              : completionBody(r, endpoint == Endpoint.COMPLETIONS ? "prompt" : "text");
      byte[] body = json.getBytes(StandardCharsets.UTF_8);
      compare(endpoint, body, json, true);
    }
  }

  @Test
  void mutatedBodiesGiveTheSameViewsOrErrors() {
    SplittableRandom r = new SplittableRandom(99);
    for (int n = 0; n < 6_000; n++) {
      Endpoint endpoint = Endpoint.values()[n % 3];
      String json =
          endpoint == Endpoint.CHAT_COMPLETIONS
              ? chatBody(r)
              : completionBody(r, endpoint == Endpoint.COMPLETIONS ? "prompt" : "text");
      String mutated = mutate(json, r);
      compare(endpoint, mutated.getBytes(StandardCharsets.UTF_8), mutated, true);
    }
  }

  @Test
  void invalidUtf8InAPromptStringIsJudgedAsBefore() {
    byte[][] inserts = {
      {(byte) 0xC1, (byte) 0x81}, // overlong 'A': Jackson decodes it leniently
      {(byte) 0xE0, (byte) 0x81, (byte) 0x81}, // overlong
      {(byte) 0xED, (byte) 0xA0, (byte) 0xBD}, // a surrogate: rejected
      {(byte) 0xFF},
      {(byte) 0xC3},
      {(byte) 0x80},
      {(byte) 0xF4, (byte) 0x90, (byte) 0x80, (byte) 0x80}, // above U+10FFFF
    };
    for (byte[] insert : inserts) {
      for (String pad : new String[] {"", "0123456789abcdef"}) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(("{\"messages\":[{\"role\":\"user\",\"content\":\"" + pad).getBytes(StandardCharsets.UTF_8));
        out.writeBytes(insert);
        out.writeBytes((pad + "\"}]}").getBytes(StandardCharsets.UTF_8));
        byte[] body = out.toByteArray();
        compare(Endpoint.CHAT_COMPLETIONS, body, "invalid UTF-8 " + java.util.Arrays.toString(insert), false);
      }
    }
  }

  @Test
  void everySpecialByteIsFoundAtEveryPositionOfAnEightByteStep() {
    // JSON source of one character: escapes, raw control characters (malformed), non-ASCII, and
    // the neighbours of '"' (0x22) and '\\' (0x5C), which are plain.
    String[] specials = {
      "\\\"", "\\\\", "\\n", "\\u0041", "\u0001", "\u001f", "\t", "é", "😀", "!", "#", "[", "]",
      "\u007f", " ", "\\/",
    };
    for (String special : specials) {
      for (int before = 0; before < 18; before++) {
        for (int after : new int[] {0, 1, 7, 8, 9}) {
          String json = "{\"messages\":[{\"role\":\"user\",\"content\":\""
              + "a".repeat(before) + special + "b".repeat(after) + "\"}]}";
          compare(Endpoint.CHAT_COMPLETIONS, json.getBytes(StandardCharsets.UTF_8), json, true);
        }
      }
    }
  }

  /**
   * Parses with both parsers and checks they agree.
   *
   * @param hashes whether to check that each text segment's hash is that of its decoded text (not
   *     for non-shortest UTF-8, whose bytes differ from the re-encoded text's)
   */
  private void compare(Endpoint endpoint, byte[] body, String what, boolean hashes) {
    Object expected = outcome(reference, endpoint, body);
    Object actual = outcome(streaming, endpoint, body);
    if (expected instanceof InvalidRequestException e) {
      assertThat(actual).as("%s should fail as %s", what, e.getMessage())
          .isInstanceOf(InvalidRequestException.class);
      InvalidRequestException a = (InvalidRequestException) actual;
      assertThat(a.param()).as(what).isEqualTo(e.param());
      if (e.getMessage().startsWith("body: malformed JSON")) {
        assertThat(a.getMessage()).as(what).startsWith("body: malformed JSON");
      } else {
        assertThat(a.getMessage()).as(what).isEqualTo(e.getMessage());
      }
      return;
    }
    assertThat(actual).as("%s: %s", what, actual).isInstanceOf(RequestView.class);
    RequestView want = (RequestView) expected;
    RequestView got = (RequestView) actual;
    assertThat(got.endpoint()).isEqualTo(want.endpoint());
    assertThat(got.model()).as(what).isEqualTo(want.model());
    assertThat(got.sessionKey()).as(what).isEqualTo(want.sessionKey());
    assertThat(got.stream()).as(what).isEqualTo(want.stream());
    assertThat(got.maxTokens()).as(what).isEqualTo(want.maxTokens());
    assertThat(got.segments()).as(what).hasSameSizeAs(want.segments());
    for (int i = 0; i < want.segments().size(); i++) {
      PromptSegment w = want.segments().get(i);
      PromptSegment g = got.segments().get(i);
      assertThat(g.role()).as(what).isEqualTo(w.role());
      assertThat(g.isTokens()).as(what).isEqualTo(w.isTokens());
      assertThat(g.tokenIds()).as(what).isEqualTo(w.tokenIds());
      assertThat(g.text()).as(what).isEqualTo(w.text());
      if (hashes && !g.isTokens()) {
        assertThat(g.textHash()).as(what).isEqualTo(TextHash.of(w.text()));
        assertThat(g).as(what).isEqualTo(w);
      }
    }
  }

  private static Object outcome(RequestParser parser, Endpoint endpoint, byte[] body) {
    try {
      return parser.parse(endpoint, body, NO_HEADERS);
    } catch (InvalidRequestException e) {
      return e;
    }
  }
}
