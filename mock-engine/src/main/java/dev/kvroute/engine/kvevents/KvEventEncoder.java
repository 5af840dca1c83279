package dev.kvroute.engine.kvevents;

import dev.kvroute.engine.model.KvCacheEvent;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * Encodes a batch of {@link KvCacheEvent}s as the msgpack payload of vLLM's {@code KVEventBatch},
 * byte for byte as msgspec's {@code msgpack.Encoder} encodes vLLM's structs ({@code
 * vllm/distributed/kv_events.py}: {@code omit_defaults=True}, {@code tag=True}; see {@link
 * KvEventLayout} for the two field layouts). msgspec writes every integer in its smallest msgpack
 * form, strings as fixstr/str8/str16, {@code float} as float64 and {@code None} as nil, as
 * msgpack-core does; the tests compare against payloads made by msgspec itself
 * ({@code src/test/resources/kv-events/make_fixtures.py}).
 *
 * <p>The mock reports every block on the GPU ({@code medium "GPU"}), in KV cache group 0 ({@code
 * group_idx 0}) of a {@code "full_attention"} model; {@code extra_keys} holds, per block, {@code
 * [lora_name]} for a LoRA adapter's block and nil otherwise.
 *
 * <p>Immutable and thread-safe.
 */
public final class KvEventEncoder {
  /** vLLM's {@code MEDIUM_GPU}. */
  public static final String MEDIUM_GPU = "GPU";

  /**
   * One packer per thread, cleared between batches: its last buffer is reused, so a step's payload
   * (up to ~60 KB for a 14K-token prompt's blocks) allocates only its result, not a chain of 8 KB
   * buffers (the precise demo run's publishers allocated as much as its routers' subscribers did).
   */
  private static final ThreadLocal<MessageBufferPacker> PACKER =
      ThreadLocal.withInitial(() -> new MessagePack.PackerConfig().withBufferSize(64 * 1024).newBufferPacker());

  /** Scratch for a uint64 hash: msgpack's 0xcf marker and 8 value bytes, one per thread. */
  private static final ThreadLocal<byte[]> UINT64 = ThreadLocal.withInitial(() -> {
    byte[] u = new byte[9];
    u[0] = (byte) 0xcf;
    return u;
  });

  /** UTF-8 bytes of the fixed strings (tags, keys, values) the encoder writes, computed once. */
  private static final Map<String, byte[]> FIXED = new HashMap<>();

  static {
    for (String f : new String[] {"type", "BlockStored", "BlockRemoved", "AllBlocksCleared", "block_hashes",
        "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx",
        "kv_cache_spec_kind", "full_attention", MEDIUM_GPU}) {
      FIXED.put(f, f.getBytes(StandardCharsets.UTF_8));
    }
  }

  private final KvEventLayout layout;
  private final BlockHashFormat hashFormat;

  public KvEventEncoder(KvEventLayout layout, BlockHashFormat hashFormat) {
    this.layout = Objects.requireNonNull(layout, "layout");
    this.hashFormat = Objects.requireNonNull(hashFormat, "hashFormat");
  }

  public KvEventLayout layout() {
    return layout;
  }

  public BlockHashFormat hashFormat() {
    return hashFormat;
  }

  /**
   * The payload of one batch.
   *
   * @param tsSeconds the batch's time, epoch seconds (vLLM's {@code time.time()})
   * @param events the step's events, in order
   * @param dataParallelRank the publisher's rank (vLLM fills it in); null leaves it off the array, as
   *     msgspec omits a trailing default
   */
  public byte[] encode(double tsSeconds, List<KvCacheEvent> events, Integer dataParallelRank) {
    MessageBufferPacker p = PACKER.get();
    p.clear();
    try {
      p.packArrayHeader(dataParallelRank == null ? 2 : 3);
      p.packDouble(tsSeconds);
      p.packArrayHeader(events.size());
      for (KvCacheEvent e : events) {
        if (e instanceof KvCacheEvent.BlockStored s) {
          stored(p, s);
        } else if (e instanceof KvCacheEvent.BlockRemoved r) {
          removed(p, r);
        } else {
          cleared(p);
        }
      }
      if (dataParallelRank != null) {
        p.packInt(dataParallelRank);
      }
      return p.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException("in-memory msgpack buffer", e);
    }
  }

  private void stored(MessagePacker p, KvCacheEvent.BlockStored s) throws IOException {
    if (layout == KvEventLayout.LEGACY) {
      p.packArrayHeader(7);
      str(p, "BlockStored");
    } else {
      p.packMapHeader(11);
      str(p, "type");
      str(p, "BlockStored");
      str(p, "block_hashes");
    }
    hashes(p, s.blockHashes());
    key(p, "parent_block_hash");
    if (s.parentBlockHash() == null) {
      p.packNil();
    } else {
      hash(p, s.parentBlockHash());
    }
    key(p, "token_ids");
    p.packArrayHeader(s.tokenIds().length);
    for (int t : s.tokenIds()) {
      p.packInt(t);
    }
    key(p, "block_size");
    p.packInt(s.blockSize());
    key(p, "lora_id");
    nullableInt(p, s.loraId());
    key(p, "medium");
    str(p, MEDIUM_GPU);
    if (layout == KvEventLayout.CURRENT) {
      key(p, "lora_name");
      nullableString(p, s.loraName());
      key(p, "extra_keys");
      p.packArrayHeader(s.blockHashes().length);
      for (int i = 0; i < s.blockHashes().length; i++) {
        if (s.loraName() == null) {
          p.packNil();
        } else {
          p.packArrayHeader(1);
          p.packString(s.loraName());
        }
      }
      key(p, "group_idx");
      p.packInt(0);
      key(p, "kv_cache_spec_kind");
      str(p, "full_attention");
    }
  }

  private void removed(MessagePacker p, KvCacheEvent.BlockRemoved r) throws IOException {
    if (layout == KvEventLayout.LEGACY) {
      p.packArrayHeader(3);
      str(p, "BlockRemoved");
    } else {
      p.packMapHeader(4);
      str(p, "type");
      str(p, "BlockRemoved");
      str(p, "block_hashes");
    }
    hashes(p, r.blockHashes());
    key(p, "medium");
    str(p, MEDIUM_GPU);
    if (layout == KvEventLayout.CURRENT) {
      key(p, "group_idx");
      p.packInt(0);
    }
  }

  private void cleared(MessagePacker p) throws IOException {
    if (layout == KvEventLayout.LEGACY) {
      p.packArrayHeader(1);
    } else {
      p.packMapHeader(1);
      str(p, "type");
    }
    str(p, "AllBlocksCleared");
  }

  /** A map key in the current layout; nothing in the positional one. */
  private void key(MessagePacker p, String name) throws IOException {
    if (layout == KvEventLayout.CURRENT) {
      str(p, name);
    }
  }

  private void hashes(MessagePacker p, long[] hashes) throws IOException {
    p.packArrayHeader(hashes.length);
    for (long h : hashes) {
      hash(p, h);
    }
  }

  private void hash(MessagePacker p, long key) throws IOException {
    if (hashFormat == BlockHashFormat.BYTES) {
      byte[] b = BlockHashFormat.toBytes(key);
      p.packBinaryHeader(b.length);
      p.writePayload(b);
    } else if (key >= 0) {
      p.packLong(key);
    } else {
      // an unsigned value above Long.MAX_VALUE: msgpack's uint64 (0xcf and 8 big-endian bytes), as
      // packBigInteger writes it, without the BigInteger
      byte[] u = UINT64.get(); // writePayload copies short arrays into the packer's buffer
      for (int i = 0; i < 8; i++) {
        u[1 + i] = (byte) (key >>> (56 - 8 * i));
      }
      p.writePayload(u);
    }
  }

  /** {@code packString} of one of the {@link #FIXED} strings, without encoding it again. */
  private static void str(MessagePacker p, String fixed) throws IOException {
    byte[] b = FIXED.get(fixed);
    p.packRawStringHeader(b.length);
    p.writePayload(b);
  }

  private static void nullableInt(MessagePacker p, Integer v) throws IOException {
    if (v == null) {
      p.packNil();
    } else {
      p.packInt(v);
    }
  }

  private static void nullableString(MessagePacker p, String v) throws IOException {
    if (v == null) {
      p.packNil();
    } else {
      p.packString(v);
    }
  }
}
