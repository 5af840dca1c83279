package dev.kvroute.core.kvevents;

import java.util.Arrays;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * One event of vLLM's KV-cache event stream ({@code vllm/distributed/kv_events.py}): a run of blocks
 * stored in the prefix cache, blocks removed from it, or the whole cache cleared. Block hashes are the
 * engine's own keys, reduced to 64 bits as vLLM reduces them by default
 * ({@code VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1}: the digest's last 8 bytes read big-endian); they are
 * opaque to the router, which maps them to its own page keys through {@link BlockStored#tokenIds}.
 *
 * <p>Records are immutable (their arrays are not copied: do not modify them) and thread-safe.
 */
public sealed interface KvEvent
    permits KvEvent.BlockStored, KvEvent.BlockRemoved, KvEvent.AllBlocksCleared, KvEvent.Unknown {

  /** vLLM's {@code MEDIUM_GPU}: the medium of blocks in the GPU prefix cache. */
  String MEDIUM_GPU = "GPU";

  /**
   * vLLM's {@code BlockStored}: full blocks newly cached, each the child of the previous one, the first
   * the child of {@code parentBlockHash}.
   *
   * @param blockHashes the engine's keys of the stored blocks, parent first (unsigned 64-bit values)
   * @param parentBlockHash the key of the first block's parent; empty for a prompt's first block
   * @param tokenIds the tokens of all stored blocks, concatenated ({@code blockHashes.length * blockSize}
   *     of them from a well-formed engine)
   * @param blockSize tokens per engine block
   * @param medium {@code "GPU"}, another tier (CPU offload), or {@code null} (older layouts)
   * @param loraName the LoRA adapter the blocks were computed with, or {@code null}
   * @param groupIdx the KV-cache group (hybrid models), or {@code -1} when absent
   */
  record BlockStored(
      long[] blockHashes,
      OptionalLong parentBlockHash,
      int[] tokenIds,
      int blockSize,
      String medium,
      String loraName,
      int groupIdx)
      implements KvEvent {
    public BlockStored {
      Objects.requireNonNull(blockHashes, "blockHashes");
      Objects.requireNonNull(parentBlockHash, "parentBlockHash");
      Objects.requireNonNull(tokenIds, "tokenIds");
    }

    /** A GPU-tier store of plain-model blocks, as the mock engine and most tests emit. */
    public static BlockStored gpu(long[] blockHashes, OptionalLong parent, int[] tokenIds, int blockSize) {
      return new BlockStored(blockHashes, parent, tokenIds, blockSize, MEDIUM_GPU, null, -1);
    }

    @Override
    public String toString() {
      return "BlockStored[hashes=" + Arrays.toString(blockHashes) + ", parent=" + parentBlockHash
          + ", tokens=" + tokenIds.length + ", blockSize=" + blockSize + ", medium=" + medium
          + ", lora=" + loraName + ", group=" + groupIdx + "]";
    }
  }

  /**
   * vLLM's {@code BlockRemoved}: blocks evicted from the prefix cache.
   *
   * @param blockHashes the engine's keys of the removed blocks
   * @param medium the tier they left, or {@code null}
   * @param groupIdx the KV-cache group, or {@code -1} when absent
   */
  record BlockRemoved(long[] blockHashes, String medium, int groupIdx) implements KvEvent {
    public BlockRemoved {
      Objects.requireNonNull(blockHashes, "blockHashes");
    }

    /** A GPU-tier removal. */
    public static BlockRemoved gpu(long... blockHashes) {
      return new BlockRemoved(blockHashes, MEDIUM_GPU, -1);
    }

    @Override
    public String toString() {
      return "BlockRemoved[hashes=" + Arrays.toString(blockHashes) + ", medium=" + medium + "]";
    }
  }

  /** vLLM's {@code AllBlocksCleared}: the engine emptied its prefix cache (e.g. {@code /reset_prefix_cache}). */
  record AllBlocksCleared() implements KvEvent {}

  /**
   * An event whose tag this decoder does not know (a later vLLM's new event type); skipped and counted.
   *
   * @param type the event's tag
   */
  record Unknown(String type) implements KvEvent {}
}
