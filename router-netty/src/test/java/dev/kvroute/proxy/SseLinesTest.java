package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link SseLines}: whole lines relayed, the rest held, and the closer before an error event. */
final class SseLinesTest {
  private final ByteBufAllocator alloc = new UnpooledByteBufAllocator(false, false, false);
  private final SseLines lines = new SseLines();
  private final List<ByteBuf> given = new ArrayList<>();

  @AfterEach
  void allReleased() {
    lines.release();
    assertThat(given).allSatisfy(b -> assertThat(b.refCnt()).as("released").isZero());
  }

  private String relay(String in, boolean last) {
    ByteBuf b = alloc.buffer().writeBytes(in.getBytes(StandardCharsets.UTF_8));
    given.add(b);
    ByteBuf out = lines.relay(b, last, alloc);
    given.add(out);
    String s = out.toString(StandardCharsets.UTF_8);
    if (out != b) {
      assertThat(b.refCnt()).as("an input not relayed as it is is released").isZero();
    }
    out.release();
    return s;
  }

  @Test
  void wholeEventsPassAsTheyAre() {
    ByteBuf b = alloc.buffer().writeBytes("data: {\"a\":1}\n\n".getBytes(StandardCharsets.UTF_8));
    assertThat(lines.relay(b, false, alloc)).isSameAs(b);
    b.release();
    assertThat(lines.closer()).isEmpty();
  }

  @Test
  void aSplitLineWaitsForItsRest() {
    assertThat(relay("data: {\"a\":1}\n\ndata: {\"b\"", false)).isEqualTo("data: {\"a\":1}\n\n");
    assertThat(relay(":2}", false)).as("still no line end").isEmpty();
    assertThat(relay("\n\ndata: [DONE]", false)).isEqualTo("data: {\"b\":2}\n\n");
    assertThat(relay("\n\n", true)).isEqualTo("data: [DONE]\n\n");
  }

  @Test
  void theBodysEndRelaysWhatIsHeld() {
    assertThat(relay("data: x\n\ndata: partial", false)).isEqualTo("data: x\n\n");
    assertThat(relay("", true)).isEqualTo("data: partial");
  }

  @Test
  void aCutStreamDropsThePartialLineAndClosesTheEvent() {
    relay("data: {\"a\":1}\n\ndata: {\"b\"", false);
    assertThat(lines.closer()).as("after a blank line: nothing").isEmpty();
    SseLines other = new SseLines();
    ByteBuf b = alloc.buffer().writeBytes("data: {\"a\":1}\ndata: {\"c\"".getBytes(StandardCharsets.UTF_8));
    other.relay(b, false, alloc).release();
    assertThat(other.closer()).as("after a whole line: one newline ends the event").isEqualTo("\n");
  }

  @Test
  void aLineLongerThanTheLimitIsRelayedInPieces() {
    String big = "data: " + "x".repeat(SseLines.MAX_HELD_BYTES + 10);
    assertThat(relay(big, false)).isEqualTo(big);
    assertThat(lines.closer()).as("mid-line: a blank line first").isEqualTo("\n\n");
  }

  @Test
  void aCarriageReturnIsALineEnd() {
    assertThat(relay("data: a\r\n\r\ndata: b\r", false)).isEqualTo("data: a\r\n\r\ndata: b\r");
    assertThat(lines.closer()).as("a CR then LF would be one line end").isEqualTo("\r\n");
    assertThat(relay("data: a\r\ndata: b", false)).isEqualTo("data: a\r\n");
    assertThat(relay("\r\n\r\n", false)).isEqualTo("data: b\r\n\r\n");
  }
}
