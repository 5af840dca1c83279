package dev.kvroute.bench.load;

import io.netty.buffer.ByteBuf;
import io.netty.util.ByteProcessor;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * Incremental parser of a {@code text/event-stream} body: feed it the body's chunks as they arrive
 * (split anywhere, including inside a UTF-8 character or a {@code \r\n}), and it hands each event's
 * data to the consumer when the blank line ending the event arrives. Multiple {@code data:} lines of
 * one event are joined with {@code \n}; comment lines and other fields are ignored (WHATWG HTML,
 * "Server-sent events", parsing rules).
 *
 * <p>Not thread-safe: one per response.
 */
final class SseParser {
  private final Consumer<String> onData;
  private final ByteProcessor scanner = this::accept;
  /** The current line's bytes so far (a plain array: this runs once per byte of every stream). */
  private byte[] line = new byte[256];
  private int lineLength;
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private boolean lastWasCr;

  SseParser(Consumer<String> onData) {
    this.onData = onData;
  }

  /** Consumes every readable byte of {@code chunk} (does not release it). */
  void feed(ByteBuf chunk) {
    chunk.forEachByte(chunk.readerIndex(), chunk.readableBytes(), scanner);
    chunk.readerIndex(chunk.writerIndex());
  }

  private boolean accept(byte b) {
    if (b == '\n') {
      if (!lastWasCr) {
        endLine();
      }
      lastWasCr = false;
    } else if (b == '\r') {
      endLine();
      lastWasCr = true;
    } else {
      if (lineLength == line.length) {
        line = Arrays.copyOf(line, line.length * 2);
      }
      line[lineLength++] = b;
      lastWasCr = false;
    }
    return true;
  }

  /** Dispatches an event whose terminating blank line never came (the stream ended). */
  void finish() {
    if (lineLength > 0) {
      endLine();
    }
    if (hasData) {
      dispatch();
    }
  }

  private void endLine() {
    if (lineLength == 0) {
      if (hasData) {
        dispatch();
      }
      return;
    }
    String l = new String(line, 0, lineLength, StandardCharsets.UTF_8);
    lineLength = 0;
    if (l.startsWith("data:")) {
      String value = l.length() > 5 && l.charAt(5) == ' ' ? l.substring(6) : l.substring(5);
      if (hasData) {
        data.append('\n');
      }
      data.append(value);
      hasData = true;
    }
  }

  private void dispatch() {
    String d = data.toString();
    data.setLength(0);
    hasData = false;
    onData.accept(d);
  }
}
