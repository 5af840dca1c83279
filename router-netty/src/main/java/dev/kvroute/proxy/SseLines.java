package dev.kvroute.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.ByteProcessor;

/**
 * An SSE response body as the router relays it to its client: in whole lines. The bytes after a
 * read's last line end ({@code '\n'} or {@code '\r'}; a line the backend's write or the network split) wait for the rest of
 * their line, so that when the router ends a stream early ({@link #closer()} then an error event:
 * a backend gone mid-stream, the shutdown) the client never gets a fragment of an event before the
 * error event, which an SDK parsing each event as JSON would fail on. Engines write whole events
 * (vLLM and SGLang one {@code data: ...\n\n} per write), so the usual read ends with {@code '\n'}
 * and is passed on as it is; a line longer than {@link #MAX_HELD_BYTES} is relayed as it comes.
 *
 * <p>Not thread-safe: one per exchange, on its event loop. {@link #release()} frees what is held.
 */
final class SseLines {
  /** The longest partial line held back (bytes); beyond it the line is relayed in pieces. */
  static final int MAX_HELD_BYTES = 64 << 10;

  private ByteBuf held;
  /** The last two bytes relayed, big-endian (an empty body counts as ending an event). */
  private int lastTwo = ('\n' << 8) | '\n';

  /**
   * Takes {@code in} (the next bytes read from the backend) and returns what to relay now: {@code in}
   * itself when it ends a line, else the bytes up to its last line end with any held bytes before
   * them (possibly none); the rest is held. {@code last}: the body's end, where everything held goes.
   * The caller owns the returned buffer.
   */
  ByteBuf relay(ByteBuf in, boolean last, ByteBufAllocator alloc) {
    if (held == null && (!in.isReadable() || last || endsLine(in.getByte(in.writerIndex() - 1)))) {
      note(in);
      return in;
    }
    ByteBuf all = in;
    if (held != null) {
      all = alloc.buffer(held.readableBytes() + in.readableBytes()).writeBytes(held).writeBytes(in);
      held.release();
      held = null;
      in.release();
    }
    int lf = last ? all.writerIndex() - 1 : all.forEachByteDesc(ByteProcessor.FIND_CRLF);
    int keep = lf < 0 ? all.readableBytes() : all.writerIndex() - lf - 1;
    if (keep > 0 && keep <= MAX_HELD_BYTES) {
      held = alloc.buffer(keep).writeBytes(all, all.writerIndex() - keep, keep);
      all.writerIndex(all.writerIndex() - keep);
    }
    note(all);
    return all;
  }

  /** SSE ends a line with LF, CR or CRLF (WHATWG HTML, "Parsing an event stream"). */
  private static boolean endsLine(byte b) {
    return b == '\n' || b == '\r';
  }

  private void note(ByteBuf relayed) {
    int n = relayed.readableBytes();
    if (n > 0) {
      int end = relayed.writerIndex();
      lastTwo = n >= 2 ? relayed.getUnsignedShort(end - 2) : ((lastTwo & 0xff) << 8) | relayed.getUnsignedByte(end - 1);
    }
  }

  /**
   * Drops what is held and returns what must precede an error event so that it starts on an event
   * boundary: nothing after a blank line, {@code "\n"} after a line ended by LF, {@code "\r\n"}
   * after one ended by CR (a CR then LF would read as one line end), {@code "\n\n"} after a line
   * relayed in pieces.
   */
  String closer() {
    release();
    int end = lastTwo & 0xff;
    return lastTwo == (('\n' << 8) | '\n') ? "" : end == '\n' ? "\n" : end == '\r' ? "\r\n" : "\n\n";
  }

  /** Frees the held bytes, if any. Safe to call more than once. */
  void release() {
    if (held != null) {
      held.release();
      held = null;
    }
  }
}
