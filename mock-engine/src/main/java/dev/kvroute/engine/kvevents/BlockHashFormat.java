package dev.kvroute.engine.kvevents;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Locale;

/**
 * How block hashes go on the wire: vLLM's {@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES} ({@code
 * ExternalBlockHash = bytes | int} since v0.10.2).
 */
public enum BlockHashFormat {
  /**
   * vLLM's default ({@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1}): the key as an unsigned 64-bit
   * msgpack integer, so keys at or above 2^63 are msgpack {@code uint64}.
   */
  INT("int"),
  /**
   * {@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0}: 32 bytes, like vLLM's SHA-256 digest. The mock's
   * 64-bit key {@code k} becomes {@code sha256(k as 8 big-endian bytes)[0..24) ++ k as 8 big-endian
   * bytes}, so the last 8 bytes read big-endian give back the {@link #INT} value, as vLLM's {@code
   * maybe_convert_block_hash} and llm-d's decoder derive it.
   */
  BYTES("bytes");

  private final String cliName;

  BlockHashFormat(String cliName) {
    this.cliName = cliName;
  }

  /** The name used by {@code --kv-events-block-hashes}. */
  public String cliName() {
    return cliName;
  }

  /**
   * The format named {@code name} (case-insensitive).
   *
   * @throws IllegalArgumentException naming the accepted values
   */
  public static BlockHashFormat fromCliName(String name) {
    for (BlockHashFormat f : values()) {
      if (f.cliName.equals(name.toLowerCase(Locale.ROOT))) {
        return f;
      }
    }
    throw new IllegalArgumentException("block hash format: " + name + " (expected one of "
        + Arrays.stream(values()).map(BlockHashFormat::cliName).toList() + ")");
  }

  /** The 32-byte form of {@code key} described on {@link #BYTES}. */
  public static byte[] toBytes(long key) {
    byte[] be = ByteBuffer.allocate(8).putLong(key).array();
    byte[] out = new byte[32];
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(be);
      System.arraycopy(digest, 0, out, 0, 24);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is part of every JRE", e);
    }
    System.arraycopy(be, 0, out, 24, 8);
    return out;
  }
}
