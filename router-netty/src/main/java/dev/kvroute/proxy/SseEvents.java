package dev.kvroute.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * An SSE response body as the router relays it to its client: in whole events. The bytes after a
 * read's last event end (a blank line: the line ends of the WHATWG HTML "event stream" format, LF,
 * CR or CRLF, twice in a row) wait for the rest of their event, so that when the router ends a
 * stream early (a backend gone mid-stream, an idle timeout, the shutdown: an error event, then
 * {@code data: [DONE]}) the client never gets part of an event before the error event, which an SDK
 * parsing each event as JSON would fail on. An SSE client acts on an event only once its blank line
 * has arrived, so holding the part before it delays nothing the client can see. Engines write whole
 * events (vLLM and SGLang one {@code data: ...\n\n} per write), so the usual read ends an event and
 * is passed on as it is. An event longer than {@link #MAX_HELD_BYTES} is relayed in pieces; cut
 * inside one, the stream cannot end with an error event ({@link #atEventEnd()} is false).
 *
 * <p>Not thread-safe: one per exchange, on its event loop. {@link #release()} frees what is held.
 */
final class SseEvents {
  /** The longest part of an event held back (bytes); beyond it the event is relayed in pieces. */
  static final int MAX_HELD_BYTES = 64 << 10;

  private ByteBuf held;
  /** Whether what was relayed so far ends on an event boundary (an empty body does). */
  private boolean atEventEnd = true;

  /**
   * Takes {@code in} (the next bytes read from the backend) and returns what to relay now: {@code in}
   * itself when it ends an event, else the bytes up to its last event end with any held bytes before
   * them (possibly none); the rest is held. {@code last}: the body's end, where everything held goes.
   * The caller owns the returned buffer.
   */
  ByteBuf relay(ByteBuf in, boolean last, ByteBufAllocator alloc) {
    if (held == null && (!in.isReadable() || last || endsEvent(in))) {
      note(in, last);
      return in;
    }
    ByteBuf all = in;
    if (held != null) {
      all = alloc.buffer(held.readableBytes() + in.readableBytes()).writeBytes(held).writeBytes(in);
      held.release();
      held = null;
      in.release();
    }
    int end = last ? all.writerIndex() : lastEventEnd(all, all.readerIndex(), all.writerIndex());
    int keep = end < 0 ? all.readableBytes() : all.writerIndex() - end;
    if (keep > 0 && keep <= MAX_HELD_BYTES) {
      held = alloc.buffer(keep).writeBytes(all, all.writerIndex() - keep, keep);
      all.writerIndex(all.writerIndex() - keep);
    }
    note(all, last);
    return all;
  }

  private void note(ByteBuf relayed, boolean last) {
    if (relayed.isReadable()) {
      atEventEnd = last || held == null && endsEvent(relayed) || held != null;
    }
  }

  /** Whether {@code b}'s readable bytes end with a blank line. */
  private static boolean endsEvent(ByteBuf b) {
    int to = b.writerIndex();
    return lastEventEnd(b, Math.max(b.readerIndex(), to - 4), to) == to;
  }

  private static boolean lineEnd(byte c) {
    return c == '\n' || c == '\r';
  }

  /**
   * The index just past the last blank line in {@code b}'s bytes {@code [from, to)} (a line end right
   * after another: {@code \n\n}, {@code \r\r}, {@code \r\n\r\n}, {@code \n\r\n}), or -1.
   */
  static int lastEventEnd(ByteBuf b, int from, int to) {
    for (int j = to - 1; j > from; j--) {
      byte c = b.getByte(j);
      if (!lineEnd(c)) {
        continue;
      }
      int k = j - 1;
      if (c == '\n' && b.getByte(k) == '\r') {
        k--; // CRLF is one line end
      }
      if (k >= from && lineEnd(b.getByte(k))) {
        return j + 1;
      }
    }
    return -1;
  }

  /**
   * Whether what was relayed so far ends on an event boundary, so that an error event may follow
   * (false only inside an event too long to hold). Drops nothing.
   */
  boolean atEventEnd() {
    return atEventEnd;
  }

  /** Frees the held bytes, if any (the part of an event that will not be relayed). Safe to call more than once. */
  void release() {
    if (held != null) {
      held.release();
      held = null;
    }
  }
}
