package dev.kvroute.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.async.ByteBufferFeeder;
import io.netty.buffer.ByteBuf;
import io.netty.util.ByteProcessor;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.Arrays;

/**
 * Reads a generation response's usage while its bytes are relayed, without buffering the response
 * and without changing a byte: the caller passes each relayed buffer to {@link #feed}, which only
 * reads it (reader and writer indexes untouched).
 *
 * <p>Two forms:
 *
 * <ul>
 *   <li>JSON ({@code application/json}): an incremental (non-blocking) Jackson parser follows the
 *       document and picks {@code usage.prompt_tokens} and
 *       {@code usage.prompt_tokens_details.cached_tokens} (OpenAI/vLLM), or {@code meta_info.prompt_tokens}
 *       and {@code meta_info.cached_tokens} (SGLang {@code /generate}). Memory: the parser's state.
 *   <li>SSE ({@code text/event-stream}): bytes are split into lines and events across reads (so an
 *       event or a UTF-8 character split between two reads is reassembled); only the current event's
 *       {@code data} is held, at most {@link #MAX_EVENT_BYTES}. Events mentioning
 *       {@code prompt_tokens} are parsed; the last usage seen wins (vLLM sends it in the final chunk
 *       with {@code choices: []}, or in every chunk with {@code continuous_usage_stats}).
 * </ul>
 *
 * <p>A malformed body just yields no usage. Not thread-safe: one per response, on its event loop.
 */
abstract class UsageScanner {
  /** Largest SSE event the scanner will hold; larger events are skipped. */
  static final int MAX_EVENT_BYTES = 1 << 20;

  private static final JsonFactory JSON = new JsonFactory();

  long promptTokens = -1;
  long cachedTokens = -1;

  /** A scanner for a response of {@code contentType}, or {@code null} when it carries no usage. */
  static UsageScanner forContentType(String contentType) {
    if (contentType == null) {
      return null;
    }
    String ct = contentType.toLowerCase(java.util.Locale.ROOT);
    if (ct.startsWith("text/event-stream")) {
      return new Sse();
    }
    if (ct.startsWith("application/json")) {
      return new Json();
    }
    return null;
  }

  /** Reads {@code buf}'s readable bytes; does not change the buffer. */
  abstract void feed(ByteBuf buf);

  /**
   * As {@link #feed}, told whether {@code buf} ends the response ({@link #end} is still called
   * after it). A JSON scanner fed a whole response in one buffer reads it at once.
   */
  void feed(ByteBuf buf, boolean last) {
    feed(buf);
  }

  /** Signals the end of the response. */
  abstract void end();

  /** {@code usage.prompt_tokens}, or {@code -1} when not seen. */
  long promptTokens() {
    return promptTokens;
  }

  /** {@code usage.prompt_tokens_details.cached_tokens}, or {@code -1} when not seen. */
  long cachedTokens() {
    return cachedTokens;
  }

  /** Whether any usage was found. */
  boolean found() {
    return promptTokens >= 0;
  }

  /**
   * Largest {@code prompt_tokens} taken as a report: no model's context holds {@code 2^31} tokens,
   * and one absurd value recorded would push the token summaries' sums out of the range where later
   * additions still count (a double's 53-bit mantissa).
   */
  static final long MAX_PROMPT_TOKENS = Integer.MAX_VALUE;

  /**
   * Whether the usage found can be true: {@code prompt_tokens} at most {@link #MAX_PROMPT_TOKENS},
   * and {@code cached_tokens}, when given, between 0 and {@code prompt_tokens}. The router records
   * only such reports.
   */
  boolean plausible() {
    return found() && promptTokens <= MAX_PROMPT_TOKENS
        && (cachedTokens == -1 || (cachedTokens >= 0 && cachedTokens <= promptTokens));
  }

  /**
   * Follows a JSON document with Jackson's parsers: a response that arrives whole in one buffer (a
   * non-streamed completion, a few hundred bytes) with the blocking parser over its bytes, which
   * costs a fraction of the non-blocking one's set-up and per-token state, skipping what is not on
   * the usage's paths ({@link #readWhole}); a response in several buffers with the non-blocking
   * parser, created at the first of them, token by token.
   */
  static final class Json extends UsageScanner {
    private JsonParser parser;
    private ByteBufferFeeder feeder;
    /** Whether the document was read (whole, or up to a malformed byte): nothing more to feed. */
    private boolean done;
    // field name per open container; null for arrays and the root
    private final ArrayDeque<String> path = new ArrayDeque<>();
    private String field;

    @Override
    void feed(ByteBuf buf, boolean last) {
      if (last && parser == null && !done) {
        done = true;
        byte[] bytes;
        int offset;
        int length = buf.readableBytes();
        if (buf.hasArray()) {
          bytes = buf.array();
          offset = buf.arrayOffset() + buf.readerIndex();
        } else {
          bytes = new byte[length];
          buf.getBytes(buf.readerIndex(), bytes);
          offset = 0;
        }
        readWhole(bytes, offset, length);
        return;
      }
      feed(buf);
    }

    /**
     * Reads {@code bytes[offset, offset + length)}, a whole document, with Jackson's blocking parser:
     * the places {@link #drain} reads, in the same order, but a member off the usage's paths is
     * passed over with {@code skipChildren} (Jackson still reads and checks its bytes) rather than
     * followed token by token, and names are taken with {@code nextFieldName}. So on UTF-8 JSON the
     * values read, and where a malformed document stops the read, are {@link #drain}'s (checked over
     * random and damaged documents); a reply's {@code choices} cost one call. Jackson's blocking and
     * non-blocking parsers themselves differ on some replies no engine sends (UTF-16 or UTF-32, a
     * second byte-order mark, an encoded surrogate in a string, a string over Jackson's 20 M-character
     * limit): there, whether the usage is found can depend on whether the reply arrived whole (as it
     * did before), and an SSE event's usage, read by the non-blocking parser before, may be found
     * where it was not or the other way round.
     */
    void readWhole(byte[] bytes, int offset, int length) {
      try (JsonParser p = JSON.createParser(bytes, offset, length)) {
        JsonToken t;
        while ((t = p.nextToken()) != null) { // each root value, as drain reads them
          if (t == JsonToken.START_OBJECT) {
            rootMembers(p);
          } else {
            p.skipChildren();
          }
        }
      } catch (IOException | RuntimeException e) {
        // malformed: keep what was read
      }
    }

    /** A root object's members, from its start to its end. */
    private void rootMembers(JsonParser p) throws IOException {
      String name;
      while ((name = p.nextFieldName()) != null) {
        JsonToken v = p.nextToken();
        if (v == JsonToken.START_OBJECT && "usage".equals(name)) {
          usageMembers(p);
        } else if (v == JsonToken.START_OBJECT && "meta_info".equals(name)) {
          metaInfoMembers(p);
        } else {
          p.skipChildren();
        }
      }
    }

    /** {@code usage}'s members: {@code prompt_tokens}, and {@code prompt_tokens_details.cached_tokens}. */
    private void usageMembers(JsonParser p) throws IOException {
      String name;
      while ((name = p.nextFieldName()) != null) {
        JsonToken v = p.nextToken();
        if (v == JsonToken.VALUE_NUMBER_INT && "prompt_tokens".equals(name)) {
          promptTokens = p.getLongValue();
        } else if (v == JsonToken.START_OBJECT && "prompt_tokens_details".equals(name)) {
          String detail;
          while ((detail = p.nextFieldName()) != null) {
            if (p.nextToken() == JsonToken.VALUE_NUMBER_INT && "cached_tokens".equals(detail)) {
              cachedTokens = p.getLongValue();
            } else {
              p.skipChildren();
            }
          }
        } else {
          p.skipChildren();
        }
      }
    }

    /** SGLang's {@code meta_info}: {@code prompt_tokens} and {@code cached_tokens}. */
    private void metaInfoMembers(JsonParser p) throws IOException {
      String name;
      while ((name = p.nextFieldName()) != null) {
        JsonToken v = p.nextToken();
        if (v == JsonToken.VALUE_NUMBER_INT && "prompt_tokens".equals(name)) {
          promptTokens = p.getLongValue();
        } else if (v == JsonToken.VALUE_NUMBER_INT && "cached_tokens".equals(name)) {
          cachedTokens = p.getLongValue();
        } else {
          p.skipChildren();
        }
      }
    }

    @Override
    void feed(ByteBuf buf) {
      if (done || !buf.isReadable()) {
        return;
      }
      if (parser == null) {
        try {
          parser = JSON.createNonBlockingByteBufferParser();
          feeder = (ByteBufferFeeder) parser.getNonBlockingInputFeeder();
        } catch (IOException e) {
          done = true;
          return;
        }
      }
      try {
        if (buf.nioBufferCount() == 1) {
          feeder.feedInput(buf.nioBuffer(buf.readerIndex(), buf.readableBytes()));
          drain();
        } else {
          for (ByteBuffer b : buf.nioBuffers(buf.readerIndex(), buf.readableBytes())) {
            feeder.feedInput(b);
            drain();
          }
        }
      } catch (IOException | RuntimeException e) {
        done = true;
      }
    }

    @Override
    void end() {
      if (done || parser == null) {
        done = true;
        return;
      }
      done = true;
      try {
        feeder.endOfInput();
        drain();
        parser.close();
      } catch (IOException | RuntimeException e) {
        // malformed tail: keep what was read
      }
    }

    private void drain() throws IOException {
      drain(parser);
    }

    private void drain(JsonParser parser) throws IOException {
      JsonToken t;
      while ((t = parser.nextToken()) != null && t != JsonToken.NOT_AVAILABLE) {
        switch (t) {
          case START_OBJECT:
          case START_ARRAY:
            path.push(field == null ? "" : field);
            field = null;
            break;
          case END_OBJECT:
          case END_ARRAY:
            path.poll();
            field = null;
            break;
          case FIELD_NAME:
            field = parser.currentName();
            break;
          case VALUE_NUMBER_INT:
            onNumber(parser);
            field = null;
            break;
          default:
            field = null;
            break;
        }
      }
    }

    /**
     * An integer's value is asked for only at the usage's places: there, one that no long holds
     * ends the read ({@code getLongValue} throws); elsewhere (a seed, an id) it is none of the
     * scanner's business and must not end it.
     */
    private void onNumber(JsonParser parser) throws IOException {
      // path holds container names innermost first; the root object is ""
      int depth = path.size();
      if (depth == 2) {
        String parent = path.peek();
        if ("usage".equals(parent) && "prompt_tokens".equals(field)) {
          promptTokens = parser.getLongValue();
        } else if ("meta_info".equals(parent) && "prompt_tokens".equals(field)) {
          promptTokens = parser.getLongValue();
        } else if ("meta_info".equals(parent) && "cached_tokens".equals(field)) {
          cachedTokens = parser.getLongValue();
        }
      } else if (depth == 3 && "cached_tokens".equals(field)) {
        var it = path.iterator();
        String parent = it.next();
        String grand = it.next();
        if ("prompt_tokens_details".equals(parent) && "usage".equals(grand)) {
          cachedTokens = parser.getLongValue();
        }
      }
    }
  }

  /** Splits an SSE stream into events and parses the ones that carry usage. */
  static final class Sse extends UsageScanner implements ByteProcessor {
    private static final byte[] DATA = "data:".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] NEEDLE = "prompt_tokens".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    private byte[] line = new byte[256];
    private int lineLength;
    private boolean lineOverflow;
    private byte[] data = new byte[256];
    private int dataLength;
    private boolean dataOverflow;
    private boolean hasData;

    @Override
    void feed(ByteBuf buf) {
      if (buf.isReadable()) {
        buf.forEachByte(buf.readerIndex(), buf.readableBytes(), this);
      }
    }

    @Override
    public boolean process(byte b) {
      if (b == '\n') {
        onLine();
      } else if (lineLength < MAX_EVENT_BYTES) {
        if (lineLength == line.length) {
          line = Arrays.copyOf(line, Math.min(MAX_EVENT_BYTES, line.length * 2));
        }
        line[lineLength++] = b;
      } else {
        lineOverflow = true;
      }
      return true;
    }

    @Override
    void end() {
      if (lineLength > 0) {
        onLine();
      }
      dispatch();
    }

    private void onLine() {
      int len = lineLength;
      if (len > 0 && line[len - 1] == '\r') {
        len--;
      }
      boolean overflow = lineOverflow;
      lineLength = 0;
      lineOverflow = false;
      if (len == 0) {
        dispatch();
        return;
      }
      if (!startsWith(line, len, DATA)) {
        return; // event:, id:, retry:, comments
      }
      int from = DATA.length;
      if (from < len && line[from] == ' ') {
        from++;
      }
      if (overflow) {
        dataOverflow = true;
        return;
      }
      int add = len - from + (hasData ? 1 : 0);
      if (dataLength + add > MAX_EVENT_BYTES) {
        dataOverflow = true;
        return;
      }
      if (dataLength + add > data.length) {
        data = Arrays.copyOf(data, Math.max(dataLength + add, data.length * 2));
      }
      if (hasData) {
        data[dataLength++] = '\n';
      }
      System.arraycopy(line, from, data, dataLength, len - from);
      dataLength += len - from;
      hasData = true;
    }

    private void dispatch() {
      if (hasData && !dataOverflow && indexOf(data, dataLength, NEEDLE) >= 0) {
        Json json = new Json();
        json.feed(io.netty.buffer.Unpooled.wrappedBuffer(data, 0, dataLength), true);
        json.end();
        if (json.promptTokens >= 0) {
          promptTokens = json.promptTokens;
        }
        if (json.cachedTokens >= 0) {
          cachedTokens = json.cachedTokens;
        }
      }
      dataLength = 0;
      hasData = false;
      dataOverflow = false;
    }

    private static boolean startsWith(byte[] a, int len, byte[] prefix) {
      if (len < prefix.length) {
        return false;
      }
      for (int i = 0; i < prefix.length; i++) {
        if (a[i] != prefix[i]) {
          return false;
        }
      }
      return true;
    }

    private static int indexOf(byte[] a, int len, byte[] needle) {
      outer:
      for (int i = 0; i + needle.length <= len; i++) {
        for (int j = 0; j < needle.length; j++) {
          if (a[i + j] != needle[j]) {
            continue outer;
          }
        }
        return i;
      }
      return -1;
    }
  }
}
