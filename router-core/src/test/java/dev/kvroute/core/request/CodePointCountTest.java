package dev.kvroute.core.request;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link PromptSegment#codePointCount()} of a segment parsed from a body (counted in the body's
 * bytes) equals the code points of its decoded text, for every kind of JSON string content.
 */
class CodePointCountTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final String[] PIECES = {
    "a", "word ", "\n", "\"", "\\", "/", "\t", "é", "中", "😀", "\u0001", "\u2028", "x\u00e9y"
  };

  @Test
  void countsEscapesMultiByteCharactersAndSurrogatePairsAsTheDecodedTextDoes() throws Exception {
    SplittableRandom random = new SplittableRandom(18);
    RequestParser parser = RequestParser.create();
    for (int round = 0; round < 500; round++) {
      StringBuilder text = new StringBuilder();
      int n = random.nextInt(40);
      for (int i = 0; i < n; i++) {
        text.append(PIECES[random.nextInt(PIECES.length)]);
      }
      String json = MAPPER.writeValueAsString(Map.of("model", "m",
          "messages", List.of(Map.of("role", "user", "content", text.toString()))));
      if (round % 2 == 1) { // Jackson writes raw UTF-8; clients may escape everything beyond ASCII
        json = escapeNonAscii(json);
      }
      RequestView view = parser.parse(Endpoint.CHAT_COMPLETIONS, json.getBytes(StandardCharsets.UTF_8), h -> null);
      for (PromptSegment s : view.segments()) {
        String decoded = s.text();
        assertThat(s.codePointCount()).as(json).isEqualTo(decoded.codePointCount(0, decoded.length()));
      }
    }
  }

  @Test
  void countsALoneEscapedSurrogateAsOne() throws Exception {
    byte[] body = "{\"messages\":[{\"role\":\"user\",\"content\":\"a\\ud83d b\\ude00\\ud83d\\ude00\"}]}"
        .getBytes(StandardCharsets.UTF_8);
    PromptSegment s = RequestParser.create().parse(Endpoint.CHAT_COMPLETIONS, body, h -> null).segments().get(0);
    assertThat(s.codePointCount()).isEqualTo(s.text().codePointCount(0, s.text().length()));
  }

  private static String escapeNonAscii(String json) {
    StringBuilder out = new StringBuilder();
    for (char c : json.toCharArray()) {
      if (c < 0x80) {
        out.append(c);
      } else {
        out.append(String.format("\\u%04x", (int) c));
      }
    }
    return out.toString();
  }
}
