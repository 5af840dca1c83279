package dev.kvroute.core.kvevents;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePackException;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

/**
 * Decodes the msgpack payload (third frame) of one vLLM KV-event message into a {@link KvEventBatch},
 * in every layout vLLM has published (msgspec structs from {@code vllm/distributed/kv_events.py}):
 *
 * <ul>
 *   <li><b>batch</b>: a positional array {@code [ts, events, data_parallel_rank]} ({@code array_like}
 *       structs, and what v0.26-v0.28 put on the wire) or a map with those keys (msgspec's default struct
 *       encoding, as {@code kv_events.py} declares it today); {@code data_parallel_rank} may be left off.
 *   <li><b>event</b>: a positional array whose first element is the tag ({@code ["BlockStored",
 *       block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium, lora_name, extra_keys,
 *       group_idx, kv_cache_spec_kind, kv_cache_spec_sliding_window]}, trailing fields that hold their
 *       default left off by {@code omit_defaults}; the oldest layout stops at {@code lora_id}), or a map
 *       with the tag under {@code "type"} and fields by name (vLLM PR #42892). Unknown keys and extra
 *       trailing fields are ignored; an unknown tag decodes to {@link KvEvent.Unknown}.
 *   <li><b>block hash</b>: an integer (vLLM's default, an unsigned 64-bit value, kept as the same 64
 *       bits in a {@code long}) or bytes (the raw digest with {@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0}),
 *       reduced to its last 8 bytes read big-endian, as vLLM's {@code maybe_convert_block_hash} does.
 * </ul>
 *
 * <p>Stateless and thread-safe.
 */
public final class KvEventDecoder {
  /**
   * msgpack's default unpacker allocates an 8,192-char string decoding buffer (16 KB) for every
   * payload that holds a string, which every batch does (the tags); a payload given whole decodes its
   * strings without that buffer, so a small one does (an eighth of what the precise demo run's
   * subscribers allocated was these buffers).
   */
  private static final MessagePack.UnpackerConfig UNPACKER =
      new MessagePack.UnpackerConfig().withStringDecoderBufferSize(64);
  /** Longest bytes-form block hash (vLLM's is a 32-byte SHA-256 digest, or a little more with a prefix). */
  private static final int MAX_HASH_BYTES = 64;
  /** Most elements allocated for an array before any is read ({@link #presized}). */
  private static final int PRESIZED_ELEMENTS = 1024;

  private KvEventDecoder() {}

  /**
   * Decodes one payload.
   *
   * @throws KvEventFormatException if {@code payload} is not a KV-event batch in a known layout (the
   *     message names what was wrong)
   */
  public static KvEventBatch decode(byte[] payload) {
    try (MessageUnpacker in = UNPACKER.newUnpacker(payload)) {
      KvEventBatch batch = batch(in);
      if (in.hasNext()) {
        throw new KvEventFormatException("trailing bytes after the batch");
      }
      return batch;
    } catch (org.msgpack.core.MessageInsufficientBufferException e) {
      throw new KvEventFormatException("not a msgpack KVEventBatch: the payload ends inside a value", e);
    } catch (MessagePackException | IOException e) {
      throw new KvEventFormatException("not a msgpack KVEventBatch: " + e.getMessage(), e);
    }
  }

  private static KvEventBatch batch(MessageUnpacker in) throws IOException {
    ValueType type = in.getNextFormat().getValueType();
    double ts = Double.NaN;
    List<KvEvent> events = null;
    int rank = -1;
    if (type == ValueType.ARRAY) {
      int n = in.unpackArrayHeader();
      if (n < 2) {
        throw new KvEventFormatException("batch array of " + n + " elements (expected: [ts, events, data_parallel_rank])");
      }
      ts = number(in, "ts");
      events = events(in);
      if (n >= 3) {
        rank = optionalInt(in, "data_parallel_rank");
      }
      for (int i = 3; i < n; i++) {
        in.skipValue();
      }
    } else if (type == ValueType.MAP) {
      int n = in.unpackMapHeader();
      for (int i = 0; i < n; i++) {
        String key = key(in);
        switch (key) {
          case "ts" -> ts = number(in, "ts");
          case "events" -> events = events(in);
          case "data_parallel_rank" -> rank = optionalInt(in, "data_parallel_rank");
          default -> in.skipValue();
        }
      }
    } else {
      throw new KvEventFormatException("batch is a msgpack " + type + " (expected: an array or a map)");
    }
    if (events == null || Double.isNaN(ts)) {
      throw new KvEventFormatException("batch without " + (events == null ? "events" : "ts"));
    }
    return new KvEventBatch(ts, events, rank);
  }

  private static List<KvEvent> events(MessageUnpacker in) throws IOException {
    if (in.getNextFormat().getValueType() != ValueType.ARRAY) {
      throw new KvEventFormatException("events is a " + in.getNextFormat().getValueType() + " (expected: an array)");
    }
    int n = in.unpackArrayHeader();
    List<KvEvent> events = new ArrayList<>(presized(n));
    for (int i = 0; i < n; i++) {
      ValueType type = in.getNextFormat().getValueType();
      if (type == ValueType.ARRAY) {
        events.add(positionalEvent(in));
      } else if (type == ValueType.MAP) {
        events.add(mapEvent(in));
      } else {
        throw new KvEventFormatException("event " + i + " is a msgpack " + type + " (expected: an array or a map)");
      }
    }
    return events;
  }

  private static KvEvent positionalEvent(MessageUnpacker in) throws IOException {
    int n = in.unpackArrayHeader();
    if (n < 1) {
      throw new KvEventFormatException("empty event array (expected: the tag first)");
    }
    String tag = string(in, "event tag");
    int read = 1;
    KvEvent event;
    switch (tag) {
      case "BlockStored" -> {
        if (n < 5) {
          throw new KvEventFormatException("BlockStored array of " + n
              + " elements (expected: at least tag, block_hashes, parent_block_hash, token_ids, block_size)");
        }
        long[] hashes = hashes(in);
        OptionalLong parent = optionalHash(in);
        int[] tokens = ints(in, "token_ids");
        int blockSize = int32(in, "block_size");
        read = 5;
        String medium = null;
        String lora = null;
        int group = -1;
        if (n > 5) {
          in.skipValue(); // lora_id: deprecated, lora_name carries the adapter
          read++;
        }
        if (n > 6) {
          medium = optionalString(in, "medium");
          read++;
        }
        if (n > 7) {
          lora = optionalString(in, "lora_name");
          read++;
        }
        if (n > 8) {
          in.skipValue(); // extra_keys
          read++;
        }
        if (n > 9) {
          group = optionalInt(in, "group_idx");
          read++;
        }
        event = stored(hashes, parent, tokens, blockSize, medium, lora, group);
      }
      case "BlockRemoved" -> {
        if (n < 2) {
          throw new KvEventFormatException("BlockRemoved without block_hashes");
        }
        long[] hashes = hashes(in);
        read = 2;
        String medium = null;
        int group = -1;
        if (n > 2) {
          medium = optionalString(in, "medium");
          read++;
        }
        if (n > 3) {
          group = optionalInt(in, "group_idx");
          read++;
        }
        event = new KvEvent.BlockRemoved(hashes, medium, group);
      }
      case "AllBlocksCleared" -> event = new KvEvent.AllBlocksCleared();
      default -> event = new KvEvent.Unknown(tag);
    }
    for (int i = read; i < n; i++) {
      in.skipValue();
    }
    return event;
  }

  private static KvEvent mapEvent(MessageUnpacker in) throws IOException {
    int n = in.unpackMapHeader();
    String tag = null;
    long[] hashes = null;
    OptionalLong parent = OptionalLong.empty();
    int[] tokens = null;
    int blockSize = -1;
    String medium = null;
    String lora = null;
    int group = -1;
    for (int i = 0; i < n; i++) {
      String key = key(in);
      switch (key) {
        case "type" -> tag = string(in, "type");
        case "block_hashes" -> hashes = hashes(in);
        case "parent_block_hash" -> parent = optionalHash(in);
        case "token_ids" -> tokens = ints(in, "token_ids");
        case "block_size" -> blockSize = int32(in, "block_size");
        case "medium" -> medium = optionalString(in, "medium");
        case "lora_name" -> lora = optionalString(in, "lora_name");
        case "group_idx" -> group = optionalInt(in, "group_idx");
        default -> in.skipValue();
      }
    }
    if (tag == null) {
      throw new KvEventFormatException("event map without \"type\"");
    }
    return switch (tag) {
      case "BlockStored" -> {
        if (hashes == null || tokens == null || blockSize < 0) {
          throw new KvEventFormatException("BlockStored map without "
              + (hashes == null ? "block_hashes" : tokens == null ? "token_ids" : "block_size"));
        }
        yield stored(hashes, parent, tokens, blockSize, medium, lora, group);
      }
      case "BlockRemoved" -> {
        if (hashes == null) {
          throw new KvEventFormatException("BlockRemoved map without block_hashes");
        }
        yield new KvEvent.BlockRemoved(hashes, medium, group);
      }
      case "AllBlocksCleared" -> new KvEvent.AllBlocksCleared();
      default -> new KvEvent.Unknown(tag);
    };
  }

  private static KvEvent.BlockStored stored(
      long[] hashes, OptionalLong parent, int[] tokens, int blockSize, String medium, String lora, int group) {
    if (blockSize <= 0) {
      throw new KvEventFormatException("BlockStored block_size " + blockSize + " (expected: > 0)");
    }
    return new KvEvent.BlockStored(hashes, parent, tokens, blockSize, medium, lora, group);
  }

  private static long[] hashes(MessageUnpacker in) throws IOException {
    int n = arrayHeader(in, "block_hashes");
    long[] out = new long[presized(n)];
    for (int i = 0; i < n; i++) {
      if (i == out.length) {
        out = Arrays.copyOf(out, grown(out.length, n));
      }
      out[i] = hash(in);
    }
    return out;
  }

  private static OptionalLong optionalHash(MessageUnpacker in) throws IOException {
    return in.tryUnpackNil() ? OptionalLong.empty() : OptionalLong.of(hash(in));
  }

  /** An integer hash as its 64 bits (unsigned values above 2^63 wrap), a bytes hash as its last 8 bytes. */
  private static long hash(MessageUnpacker in) throws IOException {
    MessageFormat f = in.getNextFormat();
    if (f == MessageFormat.UINT64) {
      byte[] u = in.readPayload(9); // 0xcf and the value's 8 big-endian bytes, without a BigInteger
      long h = 0;
      for (int i = 1; i < 9; i++) {
        h = h << 8 | (u[i] & 0xFF);
      }
      return h;
    }
    if (f.getValueType() == ValueType.INTEGER) {
      return in.unpackLong();
    }
    if (f.getValueType() == ValueType.BINARY) {
      int length = in.unpackBinaryHeader();
      if (length > MAX_HASH_BYTES) {
        // read before allocating: a header may claim 2^31 - 1 bytes in a 30-byte payload
        throw new KvEventFormatException("block hash of " + length + " bytes (expected: at most " + MAX_HASH_BYTES
            + ")");
      }
      byte[] digest = in.readPayload(length);
      long h = 0;
      for (int i = Math.max(0, digest.length - 8); i < digest.length; i++) {
        h = h << 8 | (digest[i] & 0xFF);
      }
      return h;
    }
    throw new KvEventFormatException("block hash is a msgpack " + f.getValueType() + " (expected: an integer or bytes)");
  }

  private static int[] ints(MessageUnpacker in, String field) throws IOException {
    int n = arrayHeader(in, field);
    int[] out = new int[presized(n)];
    for (int i = 0; i < n; i++) {
      if (i == out.length) {
        out = Arrays.copyOf(out, grown(out.length, n));
      }
      out[i] = int32(in, field);
    }
    return out;
  }

  /**
   * The room to allocate for an array whose msgpack header claims {@code n} elements: at most
   * {@value #PRESIZED_ELEMENTS}, so that a header claiming more elements than its payload holds (5
   * bytes can claim 2^31 - 1) costs an exception at the payload's end, not an allocation of that size;
   * a longer array grows as its elements are read.
   */
  private static int presized(int n) {
    return Math.min(n, PRESIZED_ELEMENTS);
  }

  private static int grown(int length, int n) {
    return (int) Math.min(n, 2L * length);
  }

  private static int arrayHeader(MessageUnpacker in, String field) throws IOException {
    ValueType t = in.getNextFormat().getValueType();
    if (t != ValueType.ARRAY) {
      throw new KvEventFormatException(field + " is a msgpack " + t + " (expected: an array)");
    }
    return in.unpackArrayHeader();
  }

  private static long integer(MessageUnpacker in, String field) throws IOException {
    ValueType t = in.getNextFormat().getValueType();
    if (t != ValueType.INTEGER) {
      throw new KvEventFormatException(field + " is a msgpack " + t + " (expected: an integer)");
    }
    return in.unpackLong();
  }

  private static int optionalInt(MessageUnpacker in, String field) throws IOException {
    return in.tryUnpackNil() ? -1 : int32(in, field);
  }

  /** An integer that fits in 32 bits, else a format error (a block size of 2^32 + 16 is not 16). */
  private static int int32(MessageUnpacker in, String field) throws IOException {
    long v = integer(in, field);
    if (v != (int) v) {
      throw new KvEventFormatException(field + " " + v + " (expected: a 32-bit integer)");
    }
    return (int) v;
  }

  private static double number(MessageUnpacker in, String field) throws IOException {
    ValueType t = in.getNextFormat().getValueType();
    if (t == ValueType.FLOAT) {
      return in.unpackDouble();
    }
    if (t == ValueType.INTEGER) {
      return in.unpackLong();
    }
    throw new KvEventFormatException(field + " is a msgpack " + t + " (expected: a number)");
  }

  private static String string(MessageUnpacker in, String field) throws IOException {
    ValueType t = in.getNextFormat().getValueType();
    if (t != ValueType.STRING) {
      throw new KvEventFormatException(field + " is a msgpack " + t + " (expected: a string)");
    }
    return in.unpackString();
  }

  private static String optionalString(MessageUnpacker in, String field) throws IOException {
    return in.tryUnpackNil() ? null : string(in, field);
  }

  private static String key(MessageUnpacker in) throws IOException {
    return string(in, "map key");
  }
}
