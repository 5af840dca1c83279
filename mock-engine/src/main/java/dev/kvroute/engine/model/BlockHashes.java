package dev.kvroute.engine.model;

/**
 * Chained block hashes: block {@code i}'s key is a 64-bit hash of block {@code i - 1}'s key and the
 * block's token ids, so equal keys mean equal prefixes (up to 64-bit collisions). The same scheme as
 * vLLM's {@code hash_block_tokens}, with a fixed root instead of a per-process random one, so keys are
 * reproducible across engines and runs.
 *
 * <p>Stateless and thread-safe.
 */
final class BlockHashes {
  /** The parent key of block 0 (vLLM's {@code NONE_HASH}). */
  static final long ROOT = 0x6b76726f75746521L;

  private BlockHashes() {}

  /**
   * The parent key of block 0 for requests with LoRA adapter {@code loraName}: {@link #ROOT} for the
   * base model ({@code null}), else {@code ROOT} chained with the adapter name's UTF-16 code units, so
   * that, as in vLLM (whose block hashes carry the LoRA name as an extra key), no block of one adapter
   * has the key of another's.
   */
  static long root(String loraName) {
    if (loraName == null) {
      return ROOT;
    }
    int[] units = loraName.chars().toArray();
    return next(ROOT ^ 0x4c6f5241L, units, 0, units.length); // "LoRA"
  }

  /** The key of the block holding {@code tokens[from, from + blockSize)} after {@code parent}. */
  static long next(long parent, int[] tokens, int from, int blockSize) {
    long h = parent * 0x9E3779B97F4A7C15L + 0x632BE59BD9B4E019L;
    for (int i = from, end = from + blockSize; i < end; i++) {
      h = (h ^ (tokens[i] & 0xffffffffL)) * 0xff51afd7ed558ccdL;
      h ^= h >>> 29;
    }
    return mix(h);
  }

  /** The keys of the full blocks of {@code tokens}. */
  static long[] of(int[] tokens, int blockSize) {
    return of(tokens, blockSize, null);
  }

  /** The keys of the full blocks of {@code tokens} run with LoRA adapter {@code loraName} (or null). */
  static long[] of(int[] tokens, int blockSize, String loraName) {
    long[] out = new long[tokens.length / blockSize];
    long parent = root(loraName);
    for (int i = 0; i < out.length; i++) {
      parent = next(parent, tokens, i * blockSize, blockSize);
      out[i] = parent;
    }
    return out;
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
    z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
    return z ^ (z >>> 33);
  }
}
