package dev.kvroute.core.kvevents;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessagePacker;

/**
 * Encodes a {@link KvEventBatch} as msgspec encodes vLLM's structs, in either event layout
 * {@link KvEventDecoder} reads, for router-core's tests (the mock engine has the shipped encoder,
 * checked byte for byte against msgspec's fixtures; this one only has to produce valid payloads). Integers take msgpack's smallest encoding, block
 * hashes at or above 2^63 a {@code uint 64}, {@code ts} a {@code float 64}, as msgspec writes them.
 *
 * <p>Stateless and thread-safe.
 */
final class KvEventEncoder {

  /** Which of vLLM's wire layouts to write. */
  enum Layout {
    /**
     * {@code array_like} structs (vLLM up to about v0.2x): the batch and each event are positional
     * arrays, the event's tag first, trailing default fields left off.
     */
    ARRAY_LIKE,
    /**
     * vLLM PR #42892 and later: each event a map with the tag under {@code "type"}, fields holding
     * their default left off; the batch a positional array, as v0.26-v0.28 put it on the wire.
     */
    TAGGED_MAP
  }

  private KvEventEncoder() {}

  /** The msgpack payload of {@code batch} in {@code layout}. */
  static byte[] encode(KvEventBatch batch, Layout layout) {
    try (MessageBufferPacker out = MessagePack.newDefaultBufferPacker()) {
      boolean rank = batch.dataParallelRank() >= 0;
      out.packArrayHeader(rank ? 3 : 2);
      out.packDouble(batch.ts());
      out.packArrayHeader(batch.events().size());
      for (KvEvent e : batch.events()) {
        if (layout == Layout.ARRAY_LIKE) {
          positional(out, e);
        } else {
          map(out, e);
        }
      }
      if (rank) {
        out.packInt(batch.dataParallelRank());
      }
      return out.toByteArray();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void positional(MessagePacker out, KvEvent e) throws IOException {
    if (e instanceof KvEvent.BlockStored s) {
      boolean group = s.groupIdx() >= 0;
      out.packArrayHeader(group ? 10 : 8);
      out.packString("BlockStored");
      hashes(out, s.blockHashes());
      if (s.parentBlockHash().isPresent()) {
        hash(out, s.parentBlockHash().getAsLong());
      } else {
        out.packNil();
      }
      ints(out, s.tokenIds());
      out.packInt(s.blockSize());
      out.packNil(); // lora_id
      string(out, s.medium());
      string(out, s.loraName());
      if (group) {
        out.packNil(); // extra_keys
        out.packInt(s.groupIdx());
      }
    } else if (e instanceof KvEvent.BlockRemoved r) {
      boolean group = r.groupIdx() >= 0;
      out.packArrayHeader(group ? 4 : 3);
      out.packString("BlockRemoved");
      hashes(out, r.blockHashes());
      string(out, r.medium());
      if (group) {
        out.packInt(r.groupIdx());
      }
    } else if (e instanceof KvEvent.AllBlocksCleared) {
      out.packArrayHeader(1);
      out.packString("AllBlocksCleared");
    } else if (e instanceof KvEvent.Unknown u) {
      out.packArrayHeader(1);
      out.packString(u.type());
    }
  }

  private static void map(MessagePacker out, KvEvent e) throws IOException {
    if (e instanceof KvEvent.BlockStored s) {
      boolean group = s.groupIdx() >= 0;
      out.packMapHeader(group ? 9 : 8);
      out.packString("type");
      out.packString("BlockStored");
      out.packString("block_hashes");
      hashes(out, s.blockHashes());
      out.packString("parent_block_hash");
      if (s.parentBlockHash().isPresent()) {
        hash(out, s.parentBlockHash().getAsLong());
      } else {
        out.packNil();
      }
      out.packString("token_ids");
      ints(out, s.tokenIds());
      out.packString("block_size");
      out.packInt(s.blockSize());
      out.packString("lora_id");
      out.packNil();
      out.packString("medium");
      string(out, s.medium());
      out.packString("lora_name");
      string(out, s.loraName());
      if (group) {
        out.packString("group_idx");
        out.packInt(s.groupIdx());
      }
    } else if (e instanceof KvEvent.BlockRemoved r) {
      boolean group = r.groupIdx() >= 0;
      out.packMapHeader(group ? 4 : 3);
      out.packString("type");
      out.packString("BlockRemoved");
      out.packString("block_hashes");
      hashes(out, r.blockHashes());
      out.packString("medium");
      string(out, r.medium());
      if (group) {
        out.packString("group_idx");
        out.packInt(r.groupIdx());
      }
    } else if (e instanceof KvEvent.AllBlocksCleared) {
      out.packMapHeader(1);
      out.packString("type");
      out.packString("AllBlocksCleared");
    } else if (e instanceof KvEvent.Unknown u) {
      out.packMapHeader(1);
      out.packString("type");
      out.packString(u.type());
    }
  }

  private static void hashes(MessagePacker out, long[] hashes) throws IOException {
    out.packArrayHeader(hashes.length);
    for (long h : hashes) {
      hash(out, h);
    }
  }

  /** An unsigned 64-bit value: msgpack's {@code uint 64} when the sign bit is set. */
  private static void hash(MessagePacker out, long h) throws IOException {
    if (h < 0) {
      out.packBigInteger(new java.math.BigInteger(Long.toUnsignedString(h)));
    } else {
      out.packLong(h);
    }
  }

  private static void ints(MessagePacker out, int[] values) throws IOException {
    out.packArrayHeader(values.length);
    for (int v : values) {
      out.packInt(v);
    }
  }

  private static void string(MessagePacker out, String s) throws IOException {
    if (s == null) {
      out.packNil();
    } else {
      out.packString(s);
    }
  }
}
