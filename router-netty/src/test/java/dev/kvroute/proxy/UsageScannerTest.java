package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

final class UsageScannerTest {

  static void feedInPieces(UsageScanner s, byte[] bytes, int piece) {
    for (int i = 0; i < bytes.length; i += piece) {
      ByteBuf b = Unpooled.wrappedBuffer(bytes, i, Math.min(piece, bytes.length - i));
      int reader = b.readerIndex();
      int writer = b.writerIndex();
      s.feed(b);
      assertThat(b.readerIndex()).isEqualTo(reader);
      assertThat(b.writerIndex()).isEqualTo(writer);
      b.release();
    }
    s.end();
  }

  @Test
  void jsonUsageIsReadIncrementallyByteByByte() {
    String body = "{\"id\":\"x\",\"choices\":[{\"index\":0,\"message\":{\"content\":\"hé\"},\"usage\":{\"prompt_tokens\":1}}],"
        + "\"usage\":{\"prompt_tokens\":1234,\"total_tokens\":1240,\"completion_tokens\":6,"
        + "\"prompt_tokens_details\":{\"cached_tokens\":1216}}}";
    for (int piece : new int[] {1, 2, 7, 1000}) {
      UsageScanner s = UsageScanner.forContentType("application/json");
      feedInPieces(s, body.getBytes(StandardCharsets.UTF_8), piece);
      assertThat(s.promptTokens()).isEqualTo(1234);
      assertThat(s.cachedTokens()).isEqualTo(1216);
    }
  }

  @Test
  void jsonWithoutDetailsHasUnknownCachedTokens() {
    UsageScanner s = UsageScanner.forContentType("application/json; charset=utf-8");
    feedInPieces(s, "{\"usage\":{\"prompt_tokens\":7,\"prompt_tokens_details\":null}}".getBytes(StandardCharsets.UTF_8), 3);
    assertThat(s.found()).isTrue();
    assertThat(s.cachedTokens()).isEqualTo(-1);
  }

  @Test
  void sglangMetaInfoIsRead() {
    UsageScanner s = UsageScanner.forContentType("application/json");
    feedInPieces(s, "{\"text\":\"a\",\"meta_info\":{\"prompt_tokens\":50,\"cached_tokens\":32}}".getBytes(StandardCharsets.UTF_8), 5);
    assertThat(s.promptTokens()).isEqualTo(50);
    assertThat(s.cachedTokens()).isEqualTo(32);
  }

  @Test
  void aBigIntegerElsewhereDoesNotEndTheReadButOneAtTheUsageDoes() {
    // a sampling seed past 2^63 before the usage: read on, in one buffer and in pieces
    String seeded = "{\"seed\":18446744073709551615,\"usage\":{\"prompt_tokens\":12,"
        + "\"prompt_tokens_details\":{\"cached_tokens\":8}}}";
    for (int piece : new int[] {3, 1000}) {
      UsageScanner s = UsageScanner.forContentType("application/json");
      feedInPieces(s, seeded.getBytes(StandardCharsets.UTF_8), piece);
      assertThat(s.promptTokens()).as("piece %d", piece).isEqualTo(12);
      assertThat(s.cachedTokens()).as("piece %d", piece).isEqualTo(8);
      UsageScanner whole = feedEndingWhole(seeded.getBytes(StandardCharsets.UTF_8), seeded.length(), piece == 3);
      assertThat(whole.cachedTokens()).isEqualTo(8);
    }
    // at the usage's place, a count no long holds ends the read there: what came before stays
    String huge = "{\"usage\":{\"prompt_tokens\":7,\"prompt_tokens\":99999999999999999999,"
        + "\"prompt_tokens_details\":{\"cached_tokens\":8}}}";
    UsageScanner s = UsageScanner.forContentType("application/json");
    feedInPieces(s, huge.getBytes(StandardCharsets.UTF_8), 4);
    assertThat(s.promptTokens()).isEqualTo(7);
    assertThat(s.cachedTokens()).isEqualTo(-1);
  }

  @Test
  void malformedJsonYieldsNothing() {
    UsageScanner s = UsageScanner.forContentType("application/json");
    feedInPieces(s, "{\"usage\": nope".getBytes(StandardCharsets.UTF_8), 4);
    assertThat(s.found()).isFalse();
  }

  /** Feeds {@code bytes} as a response ending in one buffer of its last {@code tail} bytes (all of them: whole). */
  static UsageScanner feedEndingWhole(byte[] bytes, int tail, boolean direct) {
    UsageScanner s = UsageScanner.forContentType("application/json");
    int split = bytes.length - tail;
    if (split > 0) {
      s.feed(Unpooled.wrappedBuffer(bytes, 0, split), false);
    }
    ByteBuf last = direct ? Unpooled.directBuffer(tail) : Unpooled.buffer(tail + 7);
    if (!direct) {
      last.writeZero(7).readerIndex(7); // an array offset and a reader index that are not zero
    }
    last.writeBytes(bytes, split, tail);
    int reader = last.readerIndex();
    s.feed(last, true);
    assertThat(last.readerIndex()).isEqualTo(reader);
    last.release();
    s.end();
    return s;
  }

  @Test
  void aResponseInOneBufferIsReadAsTheIncrementalParserReadsIt() {
    java.util.SplittableRandom r = new java.util.SplittableRandom(18);
    String[] parts = {"{", "}", "[", "]", ",", ":", "\"usage\"", "\"prompt_tokens\"", "\"cached_tokens\"",
      "\"prompt_tokens_details\"", "\"meta_info\"", "\"x\"", "12", "-3", "1.5", "null", "true", "\"é\\\"\"", " "};
    String[] documents = {
      "{\"usage\":{\"prompt_tokens\":1234,\"prompt_tokens_details\":{\"cached_tokens\":1216}}}",
      "{\"text\":\"a\",\"meta_info\":{\"prompt_tokens\":50,\"cached_tokens\":32}}",
      "{\"choices\":[{\"usage\":{\"prompt_tokens\":1}}],\"usage\":{\"prompt_tokens\":9}} {\"usage\":{\"prompt_tokens\":8}}",
      "{\"usage\": nope", "", "  ",
    };
    for (int n = 0; n < 3_000; n++) {
      String doc;
      if (n < documents.length) {
        doc = documents[n];
      } else { // well-formed or not, nested or not: both paths must agree on every one
        StringBuilder sb = new StringBuilder("{\"usage\":{");
        for (int k = r.nextInt(30); k > 0; k--) {
          sb.append(parts[r.nextInt(parts.length)]);
        }
        doc = sb.toString();
      }
      byte[] bytes = doc.getBytes(StandardCharsets.UTF_8);
      UsageScanner incremental = UsageScanner.forContentType("application/json");
      feedInPieces(incremental, bytes, 1 + r.nextInt(8));
      for (int tail : new int[] {bytes.length, Math.min(bytes.length, 3)}) {
        for (boolean direct : new boolean[] {false, true}) {
          UsageScanner s = feedEndingWhole(bytes, tail, direct);
          assertThat(s.promptTokens()).as("%s (last %d bytes, direct %s)", doc, tail, direct)
              .isEqualTo(incremental.promptTokens());
          assertThat(s.cachedTokens()).as("%s (last %d bytes, direct %s)", doc, tail, direct)
              .isEqualTo(incremental.cachedTokens());
        }
      }
    }
    assertThat(feedEndingWhole(documents[0].getBytes(StandardCharsets.UTF_8), documents[0].length(), true).cachedTokens())
        .isEqualTo(1216);
  }

  static final String SSE = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" café\"}}]}\n\n"
      + "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" 日本\"},\"finish_reason\":\"length\"}]}\n\n"
      + "data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":300,\"total_tokens\":302,\"completion_tokens\":2,"
      + "\"prompt_tokens_details\":{\"cached_tokens\":288}}}\n\n"
      + "data: [DONE]\n\n";

  @Test
  void sseUsageChunkIsFoundWhateverTheSplits() {
    byte[] bytes = SSE.getBytes(StandardCharsets.UTF_8);
    for (int piece = 1; piece <= 13; piece++) {
      UsageScanner s = UsageScanner.forContentType("text/event-stream; charset=utf-8");
      feedInPieces(s, bytes, piece);
      assertThat(s.promptTokens()).as("piece %d", piece).isEqualTo(300);
      assertThat(s.cachedTokens()).isEqualTo(288);
    }
  }

  @Test
  void sseSplitInsideAMultiByteCharacterAndWithCrLf() {
    String crlf = SSE.replace("\n", "\r\n");
    byte[] bytes = crlf.getBytes(StandardCharsets.UTF_8);
    int cut = crlf.indexOf("日") * 0; // cut positions computed on bytes below
    byte[] needle = "日".getBytes(StandardCharsets.UTF_8);
    for (int i = 0; i < bytes.length - 2; i++) {
      if (bytes[i] == needle[0] && bytes[i + 1] == needle[1]) {
        cut = i + 1; // inside the three-byte character
        break;
      }
    }
    UsageScanner s = UsageScanner.forContentType("text/event-stream");
    ByteBuf first = Unpooled.wrappedBuffer(bytes, 0, cut);
    ByteBuf second = Unpooled.wrappedBuffer(bytes, cut, bytes.length - cut);
    s.feed(first);
    s.feed(second);
    s.end();
    first.release();
    second.release();
    assertThat(s.promptTokens()).isEqualTo(300);
    assertThat(s.cachedTokens()).isEqualTo(288);
  }

  @Test
  void continuousUsageKeepsTheLastReport() {
    String sse = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":10,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n"
        + "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}],\"usage\":{\"prompt_tokens\":10,\"prompt_tokens_details\":{\"cached_tokens\":16}}}\n\n";
    UsageScanner s = UsageScanner.forContentType("text/event-stream");
    feedInPieces(s, sse.getBytes(StandardCharsets.UTF_8), 9);
    assertThat(s.cachedTokens()).isEqualTo(16);
  }

  @Test
  void streamWithoutUsageYieldsNothing() {
    UsageScanner s = UsageScanner.forContentType("text/event-stream");
    feedInPieces(s, "data: {\"choices\":[]}\n\ndata: [DONE]\n\n".getBytes(StandardCharsets.UTF_8), 4);
    assertThat(s.found()).isFalse();
  }

  @Test
  void otherContentTypesAreNotScanned() {
    assertThat(UsageScanner.forContentType("text/plain")).isNull();
    assertThat(UsageScanner.forContentType(null)).isNull();
  }
  @Test
  void onlyUsageAnEngineCouldSendIsPlausible() {
    String[][] cases = {
      {"{\"usage\":{\"prompt_tokens\":2147483647,\"prompt_tokens_details\":{\"cached_tokens\":2147483647}}}", "true"},
      {"{\"usage\":{\"prompt_tokens\":0,\"prompt_tokens_details\":{\"cached_tokens\":0}}}", "true"},
      {"{\"usage\":{\"prompt_tokens\":7}}", "true"},
      {"{\"usage\":{\"prompt_tokens\":2147483648}}", "false"},
      {"{\"usage\":{\"prompt_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":13}}}", "false"},
      {"{\"usage\":{\"prompt_tokens\":12,\"prompt_tokens_details\":{\"cached_tokens\":-2}}}", "false"},
      {"{\"usage\":{\"prompt_tokens\":-1}}", "false"},
    };
    for (String[] c : cases) {
      UsageScanner s = UsageScanner.forContentType("application/json");
      feedInPieces(s, c[0].getBytes(StandardCharsets.UTF_8), 1000);
      assertThat(s.plausible()).as(c[0]).isEqualTo(Boolean.parseBoolean(c[1]));
    }
  }
}
