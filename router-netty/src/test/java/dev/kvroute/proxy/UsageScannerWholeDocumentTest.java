package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link UsageScanner.Json#readWhole} (a response in one buffer: Jackson's blocking parser, skipping
 * what is off the usage's paths) against the token-by-token read of the same bytes fed in pieces
 * (the non-blocking parser, every token followed): the same values over random documents with the
 * usage's names at every depth, and after random damage (a read that stops at an error keeps the
 * same values in both).
 */
final class UsageScannerWholeDocumentTest {
  private static final String[] KEYS = {
    "usage", "meta_info", "prompt_tokens", "cached_tokens", "prompt_tokens_details", "id",
    "choices", "message", "content", "usag", "usages", "\u00e9t\u00e9", "completion_tokens",
  };
  private static final String STRUCTURAL = " ,:{}[]\"\\0-.eE+tfn\u0001";

  /** {promptTokens, cachedTokens} as the whole-document read finds them. */
  private static long[] whole(byte[] doc) {
    UsageScanner.Json s = new UsageScanner.Json();
    s.feed(Unpooled.wrappedBuffer(doc), true);
    s.end();
    return new long[] {s.promptTokens(), s.cachedTokens()};
  }

  /** {promptTokens, cachedTokens} as the token-by-token read finds them, fed 5 bytes at a time. */
  private static long[] byTokens(byte[] doc) {
    UsageScanner.Json s = new UsageScanner.Json();
    UsageScannerTest.feedInPieces(s, doc, 5);
    return new long[] {s.promptTokens(), s.cachedTokens()};
  }

  @Test
  void randomDocumentsReadAsTokenByToken() {
    Random r = new Random(18);
    int withUsage = 0;
    for (int i = 0; i < 20_000; i++) {
      StringBuilder sb = new StringBuilder();
      object(r, sb, 0);
      byte[] doc = sb.toString().getBytes(StandardCharsets.UTF_8);
      long[] expected = byTokens(doc);
      assertThat(whole(doc)).as(sb.toString()).containsExactly(expected);
      if (expected[0] >= 0 || expected[1] >= 0) {
        withUsage++;
      }
    }
    assertThat(withUsage).isGreaterThan(5_000);
  }

  @Test
  void damagedDocumentsReadAsTokenByToken() {
    Random r = new Random(19);
    int withUsage = 0;
    for (int i = 0; i < 20_000; i++) {
      StringBuilder sb = new StringBuilder();
      object(r, sb, 0);
      byte[] doc = sb.toString().getBytes(StandardCharsets.UTF_8);
      switch (r.nextInt(5)) {
        case 0 -> doc = java.util.Arrays.copyOf(doc, r.nextInt(doc.length)); // cut short
        case 1 -> doc[r.nextInt(doc.length)] = (byte) r.nextInt(256); // one byte changed
        case 2 -> doc[r.nextInt(doc.length)] = (byte) STRUCTURAL.charAt(r.nextInt(STRUCTURAL.length()));
        case 3 -> { // a second root value after it
          byte[] two = java.util.Arrays.copyOf(doc, 2 * doc.length + 1);
          two[doc.length] = ' ';
          System.arraycopy(doc, 0, two, doc.length + 1, doc.length);
          doc = two;
        }
        default -> {
          byte[] longer = java.util.Arrays.copyOf(doc, doc.length + 1); // one byte more at the end
          longer[doc.length] = (byte) "} 0,\n[\"".charAt(r.nextInt(7));
          doc = longer;
        }
      }
      long[] expected = byTokens(doc);
      assertThat(whole(doc)).as(new String(doc, StandardCharsets.ISO_8859_1)).containsExactly(expected);
      if (expected[0] >= 0 || expected[1] >= 0) {
        withUsage++;
      }
    }
    assertThat(withUsage).isGreaterThan(2_000);
  }

  @Test
  void theUsagePlacesAreTheScannersPlaces() {
    assertRead("{\"usage\":{\"prompt_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":8}}}", 12, 8);
    assertRead("{\"meta_info\":{\"prompt_tokens\":50,\"cached_tokens\":32}}", 50, 32);
    // nested deeper, in an array, or as a float: not the usage
    assertRead("{\"choices\":[{\"usage\":{\"prompt_tokens\":1}}],\"x\":{\"usage\":{\"prompt_tokens\":2}}}", -1, -1);
    assertRead("{\"usage\":[{\"prompt_tokens\":1}],\"meta_info\":{\"prompt_tokens\":2.0}}", -1, -1);
    assertRead("{\"usage\":{\"cached_tokens\":3,\"prompt_tokens_details\":{\"prompt_tokens\":4}}}", -1, -1);
    assertRead("{\"meta_info\":{\"prompt_tokens_details\":{\"cached_tokens\":4}}}", -1, -1);
    // the last of repeated members wins; a big integer elsewhere is nobody's business; an escaped name is its name
    assertRead("{\"seed\":18446744073709551615,\"usage\":{\"prompt_tokens\":1,\"prompt_tokens\":-0}}", 0, -1);
    assertRead("{\"us\\u0061ge\":{\"prompt_tokens\":9223372036854775807}}", Long.MAX_VALUE, -1);
    // in a second root object too; an integer no long holds at the usage ends the read there
    assertRead("{} {\"usage\":{\"prompt_tokens\":3}}", 3, -1);
    assertRead("{\"meta_info\":{\"cached_tokens\":7,\"prompt_tokens\":9223372036854775808,\"cached_tokens\":8}}", -1, 7);
  }

  @Test
  void anSseEventWithTheUsageIsReadWhole() {
    byte[] doc = "{\"id\":\"c\",\"usage\":{\"prompt_tokens\":40,\"prompt_tokens_details\":{\"cached_tokens\":32}}}"
        .getBytes(StandardCharsets.UTF_8);
    UsageScanner sse = UsageScanner.forContentType("text/event-stream");
    byte[] events = ("data: {\"choices\":[]}\n\ndata: " + new String(doc, StandardCharsets.UTF_8) + "\n\ndata: [DONE]\n\n")
        .getBytes(StandardCharsets.UTF_8);
    UsageScannerTest.feedInPieces(sse, events, 7);
    assertThat(new long[] {sse.promptTokens(), sse.cachedTokens()}).containsExactly(40, 32);
  }

  private static void assertRead(String doc, long prompt, long cached) {
    byte[] bytes = doc.getBytes(StandardCharsets.UTF_8);
    assertThat(whole(bytes)).as(doc).containsExactly(prompt, cached);
    assertThat(byTokens(bytes)).as(doc).containsExactly(prompt, cached);
  }

  // ---- random documents --------------------------------------------------------------------

  private static void object(Random r, StringBuilder sb, int depth) {
    sb.append('{').append(ws(r));
    int n = depth > 4 ? r.nextInt(2) : r.nextInt(5);
    int usageAt = depth <= 1 && r.nextInt(3) > 0 ? r.nextInt(n + 1) : -1;
    for (int i = 0; i <= n; i++) {
      if (i == usageAt) {
        // a usage-shaped member, so that the places are often there to be read
        sb.append(i > 0 ? "," : "").append('"').append(r.nextBoolean() ? "usage" : "meta_info").append("\":");
        object(r, sb, depth + 1);
        sb.setLength(sb.length() - 1);
        while (Character.isWhitespace(sb.charAt(sb.length() - 1))) {
          sb.setLength(sb.length() - 1);
        }
        sb.append(sb.charAt(sb.length() - 1) == '{' ? "" : ",").append("\"prompt_tokens\":").append(number(r))
            .append(",\"cached_tokens\":").append(number(r))
            .append(",\"prompt_tokens_details\":{\"cached_tokens\":").append(number(r)).append("}}");
        continue;
      }
      if (i == n) {
        break;
      }
      if (i > 0 || usageAt == 0) {
        sb.append(',').append(ws(r));
      }
      String key = KEYS[r.nextInt(KEYS.length)];
      if (r.nextInt(200) == 0) {
        key = "us\\u0061ge"; // escaped: Jackson's to read
      }
      sb.append('"').append(key).append('"').append(ws(r)).append(':').append(ws(r));
      value(r, sb, depth + 1);
      sb.append(ws(r));
    }
    sb.append('}');
  }

  private static void value(Random r, StringBuilder sb, int depth) {
    switch (depth > 5 ? 3 + r.nextInt(4) : r.nextInt(7)) {
      case 0, 1 -> object(r, sb, depth);
      case 2 -> {
        sb.append('[').append(ws(r));
        int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
          if (i > 0) {
            sb.append(',').append(ws(r));
          }
          value(r, sb, depth + 1);
        }
        sb.append(ws(r)).append(']');
      }
      case 3, 4 -> sb.append(number(r));
      case 5 -> sb.append(new String[] {"true", "false", "null"}[r.nextInt(3)]);
      default -> {
        sb.append('"');
        int n = r.nextInt(8);
        for (int i = 0; i < n; i++) {
          sb.append(new String[] {"a", "Z", " ", "\\n", "\\\"", "\\\\", "\\u00e9", "\u00e9", "\u4e2d", "\ud83d\ude00", "{", "]", ":", ","}[r.nextInt(14)]);
        }
        sb.append('"');
      }
    }
  }

  private static String number(Random r) {
    return switch (r.nextInt(8)) {
      case 0 -> "-" + r.nextInt(1000);
      case 1 -> Long.toString(r.nextLong());
      case 2 -> "18446744073709551616";
      case 3 -> r.nextInt(100) + "." + r.nextInt(100);
      case 4 -> r.nextInt(10) + "e" + (r.nextBoolean() ? "-" : "+") + r.nextInt(20);
      case 5 -> "0";
      default -> Integer.toString(r.nextInt(100_000));
    };
  }

  private static String ws(Random r) {
    return r.nextInt(4) == 0 ? new String[] {" ", "\n", "\t", "\r\n  "}[r.nextInt(4)] : "";
  }
}
