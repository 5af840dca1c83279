package dev.kvroute.engine.kvevents;

import java.util.Arrays;
import java.util.Locale;

/**
 * The field layout a mock engine's KV events are encoded in: vLLM changed it over versions
 * ({@code vllm/distributed/kv_events.py}). Both keep the batch a positional array {@code [ts, events,
 * data_parallel_rank]}.
 */
public enum KvEventLayout {
  /**
   * vLLM v0.10.2 to v0.11: every event a msgspec {@code array_like} tagged struct, the tag first:
   * {@code ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]},
   * {@code ["BlockRemoved", block_hashes, medium]}, {@code ["AllBlocksCleared"]}.
   */
  LEGACY("legacy"),
  /**
   * vLLM after #42892 (v0.24 on; captured from v0.26): every event a msgpack map whose first key is
   * {@code "type"} (the tag), then the fields in declaration order, those at their default omitted:
   * {@code BlockStored} has {@code block_hashes, parent_block_hash, token_ids, block_size, lora_id,
   * medium, lora_name, extra_keys, group_idx, kv_cache_spec_kind}; {@code BlockRemoved} has {@code
   * block_hashes, medium, group_idx}.
   */
  CURRENT("current");

  private final String cliName;

  KvEventLayout(String cliName) {
    this.cliName = cliName;
  }

  /** The name used by {@code --kv-events-layout}. */
  public String cliName() {
    return cliName;
  }

  /**
   * The layout named {@code name} (case-insensitive).
   *
   * @throws IllegalArgumentException naming the accepted values
   */
  public static KvEventLayout fromCliName(String name) {
    for (KvEventLayout l : values()) {
      if (l.cliName.equals(name.toLowerCase(Locale.ROOT))) {
        return l;
      }
    }
    throw new IllegalArgumentException("KV event layout: " + name + " (expected one of "
        + Arrays.stream(values()).map(KvEventLayout::cliName).toList() + ")");
  }
}
