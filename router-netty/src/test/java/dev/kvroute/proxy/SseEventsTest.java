package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link SseEvents}: whole events relayed, the rest held, and whether an error event may follow. */
final class SseEventsTest {
  private final ByteBufAllocator alloc = new UnpooledByteBufAllocator(false, false, false);
  private final SseEvents lines = new SseEvents();
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
    out.release();
    return s;
  }

  @Test
  void wholeEventsPassAsTheyAre() {
    ByteBuf b = alloc.buffer().writeBytes("data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\n".getBytes(StandardCharsets.UTF_8));
    assertThat(lines.relay(b, false, alloc)).isSameAs(b);
    b.release();
    assertThat(lines.atEventEnd()).isTrue();
  }

  @Test
  void aSplitEventWaitsForItsBlankLine() {
    assertThat(relay("data: {\"a\":1}\n\ndata: {\"b\"", false)).isEqualTo("data: {\"a\":1}\n\n");
    assertThat(relay(":2}\n", false)).as("its line ended, its event not").isEmpty();
    assertThat(relay("\ndata: [DONE]", false)).isEqualTo("data: {\"b\":2}\n\n");
    assertThat(relay("\n\n", true)).isEqualTo("data: [DONE]\n\n");
    assertThat(lines.atEventEnd()).isTrue();
  }

  @Test
  void aMultiLineEventIsHeldWhole() {
    assertThat(relay("data: {\"a\":\ndata: 1}\n", false)).isEmpty();
    assertThat(lines.atEventEnd()).as("nothing of it relayed yet").isTrue();
    assertThat(relay("\n", false)).isEqualTo("data: {\"a\":\ndata: 1}\n\n");
  }

  @Test
  void theBodysEndRelaysWhatIsHeld() {
    assertThat(relay("data: x\n\ndata: partial", false)).isEqualTo("data: x\n\n");
    assertThat(relay("", true)).isEqualTo("data: partial");
  }

  @Test
  void anEventLongerThanTheLimitIsRelayedInPiecesAndThenNoErrorEventMayFollow() {
    String big = "data: " + "x".repeat(SseEvents.MAX_HELD_BYTES + 10);
    assertThat(relay(big, false)).isEqualTo(big);
    assertThat(lines.atEventEnd()).isFalse();
    assertThat(relay("\n\ndata: y\n\n", false)).isEqualTo("\n\ndata: y\n\n");
    assertThat(lines.atEventEnd()).isTrue();
  }

  @Test
  void everyLineEndOfTheFormatEndsAnEvent() {
    for (String end : new String[] {"\n\n", "\r\r", "\r\n\r\n", "\n\r\n", "\r\n\n"}) {
      String event = "data: a" + end;
      ByteBuf b = Unpooled.copiedBuffer(event + "data: b", StandardCharsets.UTF_8);
      assertThat(SseEvents.lastEventEnd(b, 0, b.writerIndex())).as(end.replace("\r", "CR").replace("\n", "LF"))
          .isEqualTo(event.length());
      b.release();
    }
    ByteBuf one = Unpooled.copiedBuffer("data: a\r\ndata: b\r\n", StandardCharsets.UTF_8);
    assertThat(SseEvents.lastEventEnd(one, 0, one.writerIndex())).as("CRLF is one line end").isEqualTo(-1);
    one.release();
  }
}
