package dev.kvroute.engine.kvevents;

import dev.kvroute.engine.model.KvCacheEvent;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.util.List;
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
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
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
      p.packString("BlockStored");
    } else {
      p.packMapHeader(11);
      p.packString("type");
      p.packString("BlockStored");
      p.packString("block_hashes");
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
    p.packString(MEDIUM_GPU);
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
      p.packString("full_attention");
    }
  }

  private void removed(MessagePacker p, KvCacheEvent.BlockRemoved r) throws IOException {
    if (layout == KvEventLayout.LEGACY) {
      p.packArrayHeader(3);
      p.packString("BlockRemoved");
    } else {
      p.packMapHeader(4);
      p.packString("type");
      p.packString("BlockRemoved");
      p.packString("block_hashes");
    }
    hashes(p, r.blockHashes());
    key(p, "medium");
    p.packString(MEDIUM_GPU);
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
      p.packString("type");
    }
    p.packString("AllBlocksCleared");
  }

  /** A map key in the current layout; nothing in the positional one. */
  private void key(MessagePacker p, String name) throws IOException {
    if (layout == KvEventLayout.CURRENT) {
      p.packString(name);
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
      p.packBigInteger(new BigInteger(Long.toUnsignedString(key)));
    }
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
