package dev.kvroute.bench.load;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class SseParserTest {
  @Test
  void eventsSplitAnywhereIncludingInsideAUtf8CharacterAndCrlf() {
    byte[] stream = "data: {\"a\":\"é€\"}\r\n\r\n: comment\ndata: x\ndata: y\n\ndata:[DONE]\n\n".getBytes(StandardCharsets.UTF_8);
    for (int split = 1; split < stream.length; split++) {
      List<String> out = new ArrayList<>();
      SseParser p = new SseParser(out::add);
      feed(p, stream, 0, split);
      feed(p, stream, split, stream.length);
      p.finish();
      assertThat(out).as("split at %d", split).containsExactly("{\"a\":\"é€\"}", "x\ny", "[DONE]");
    }
  }

  @Test
  void anUnterminatedLastEventIsDispatchedAtTheEnd() {
    List<String> out = new ArrayList<>();
    SseParser p = new SseParser(out::add);
    feed(p, "data: last".getBytes(StandardCharsets.UTF_8), 0, 10);
    assertThat(out).isEmpty();
    p.finish();
    assertThat(out).containsExactly("last");
  }

  private static void feed(SseParser p, byte[] b, int from, int to) {
    ByteBuf buf = Unpooled.wrappedBuffer(b, from, to - from);
    try {
      p.feed(buf);
    } finally {
      buf.release();
    }
  }
}
