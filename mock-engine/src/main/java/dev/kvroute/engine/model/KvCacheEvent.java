package dev.kvroute.engine.model;

import java.util.Arrays;
import java.util.Objects;

/**
 * A change to an engine's prefix cache, as vLLM's {@code BlockPool} reports it ({@code
 * vllm/distributed/kv_events.py}: {@code BlockStored}, {@code BlockRemoved}, {@code
 * AllBlocksCleared}). The engine model produces them when {@link EngineConfig#enableKvCacheEvents()}
 * is set and hands them, one engine step at a time, to {@link EngineListener#onKvEvents}; the mock
 * server encodes them on vLLM's wire format.
 *
 * <p>Block hashes are the model's own 64-bit chained keys ({@code BlockHashes}: parent key, the
 * block's token ids and the LoRA adapter's name), carried as unsigned values. They are <em>not</em>
 * vLLM's SHA-256 keys, and a consumer must not recompute them: like vLLM's (random per process unless
 * {@code PYTHONHASHSEED} is set), they are identifiers to learn from the events' token ids.
 *
 * <p>Immutable and thread-safe as long as nobody modifies the arrays.
 */
public sealed interface KvCacheEvent {

  /**
   * Full blocks that entered the prefix cache, in chain order: block {@code i}'s tokens are {@code
   * tokenIds[i * blockSize, (i + 1) * blockSize)} and its parent is block {@code i - 1}, or {@code
   * parentBlockHash} for block 0.
   *
   * @param blockHashes the blocks' keys (unsigned 64-bit)
   * @param parentBlockHash key of the block before the first one, or null when the first block starts
   *     the sequence (vLLM's {@code None})
   * @param tokenIds the tokens of all the blocks, concatenated ({@code blockHashes.length *
   *     blockSize} of them)
   * @param blockSize tokens per block
   * @param loraId the LoRA adapter's integer id (vLLM's {@code lora_int_id}), or null without one
   * @param loraName the LoRA adapter's name, or null without one
   */
  record BlockStored(
      long[] blockHashes, Long parentBlockHash, int[] tokenIds, int blockSize, Integer loraId, String loraName)
      implements KvCacheEvent {
    public BlockStored {
      Objects.requireNonNull(blockHashes, "blockHashes");
      Objects.requireNonNull(tokenIds, "tokenIds");
      if (blockHashes.length == 0) {
        throw new IllegalArgumentException("blockHashes: empty (expected: at least one block)");
      }
      if (blockSize <= 0 || tokenIds.length != (long) blockHashes.length * blockSize) {
        throw new IllegalArgumentException("tokenIds: " + tokenIds.length + " tokens for "
            + blockHashes.length + " blocks of " + blockSize + " (expected: blocks x blockSize)");
      }
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlockStored b
          && Arrays.equals(blockHashes, b.blockHashes)
          && Objects.equals(parentBlockHash, b.parentBlockHash)
          && Arrays.equals(tokenIds, b.tokenIds)
          && blockSize == b.blockSize
          && Objects.equals(loraId, b.loraId)
          && Objects.equals(loraName, b.loraName);
    }

    @Override
    public int hashCode() {
      return Objects.hash(Arrays.hashCode(blockHashes), parentBlockHash, Arrays.hashCode(tokenIds), blockSize,
          loraId, loraName);
    }

    @Override
    public String toString() {
      return "BlockStored" + hex(blockHashes) + " parent=" + (parentBlockHash == null
          ? "None" : Long.toUnsignedString(parentBlockHash)) + " tokens=" + tokenIds.length
          + (loraName == null ? "" : " lora=" + loraName);
    }
  }

  /**
   * Cached blocks that left the prefix cache (evicted to make room). vLLM reports one block per
   * event; so does the model.
   *
   * @param blockHashes the blocks' keys (unsigned 64-bit)
   */
  record BlockRemoved(long[] blockHashes) implements KvCacheEvent {
    public BlockRemoved {
      Objects.requireNonNull(blockHashes, "blockHashes");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof BlockRemoved b && Arrays.equals(blockHashes, b.blockHashes);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(blockHashes);
    }

    @Override
    public String toString() {
      return "BlockRemoved" + hex(blockHashes);
    }
  }

  /** Every cached block was dropped (a prefix-cache reset). */
  record AllBlocksCleared() implements KvCacheEvent {}

  private static String hex(long[] hashes) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < hashes.length; i++) {
      sb.append(i == 0 ? "" : ", ").append(Long.toUnsignedString(hashes[i]));
    }
    return sb.append(']').toString();
  }
}
