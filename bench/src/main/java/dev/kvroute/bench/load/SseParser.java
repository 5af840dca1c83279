package dev.kvroute.bench.load;

import io.netty.buffer.ByteBuf;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
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
  private final ByteArrayOutputStream line = new ByteArrayOutputStream(256);
  private final StringBuilder data = new StringBuilder();
  private boolean hasData;
  private boolean lastWasCr;

  SseParser(Consumer<String> onData) {
    this.onData = onData;
  }

  /** Consumes every readable byte of {@code chunk} (does not release it). */
  void feed(ByteBuf chunk) {
    int end = chunk.writerIndex();
    for (int i = chunk.readerIndex(); i < end; i++) {
      byte b = chunk.getByte(i);
      if (b == '\n') {
        if (!lastWasCr) {
          endLine();
        }
        lastWasCr = false;
      } else if (b == '\r') {
        endLine();
        lastWasCr = true;
      } else {
        line.write(b);
        lastWasCr = false;
      }
    }
    chunk.readerIndex(end);
  }

  /** Dispatches an event whose terminating blank line never came (the stream ended). */
  void finish() {
    if (line.size() > 0) {
      endLine();
    }
    if (hasData) {
      dispatch();
    }
  }

  private void endLine() {
    if (line.size() == 0) {
      if (hasData) {
        dispatch();
      }
      return;
    }
    String l = line.toString(StandardCharsets.UTF_8);
    line.reset();
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
