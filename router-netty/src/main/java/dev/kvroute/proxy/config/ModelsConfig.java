package dev.kvroute.proxy.config;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * How the router learns which backend serves which model and LoRA adapter, and what it tells clients.
 *
 * <pre>
 * models:
 *   refreshInterval: 30s          # GET /v1/models of every backend this often; 0s = only on events
 *   maxCharsPerToken: 128         # a prompt of C characters has at least C / 128 tokens
 *   loraAffinity: true            # prefer replicas running a request's adapter
 *   aliases:                      # public name: served name (the body's model is rewritten)
 *     chat: meta-llama/Llama-3.1-8B-Instruct
 * </pre>
 *
 * <p>Immutable and thread-safe.
 *
 * @param refreshInterval time between discoveries of every backend's served models from its
 *     {@code GET /v1/models} (besides the ones made when a backend is added, recovers, restarts, or has
 *     an adapter loaded or unloaded through the admin API); {@code 0} turns the periodic one off.
 *     Default 30s
 * @param maxCharsPerToken the most characters (Unicode code points) any one token of the engines'
 *     tokenizers spans, {@code >= 1}: a prompt of {@code C} characters is at least
 *     {@code ceil(C / maxCharsPerToken)} tokens, so one that cannot fit any candidate's
 *     {@code max_model_len} is refused before it is tokenized. vLLM's renderer makes the same check
 *     with its tokenizer's own bound; too small a value refuses prompts an engine would take. Default
 *     128, above the longest token of the common vocabularies
 * @param loraAffinity prefer, for a request with a LoRA adapter, the replicas running it (llm-d's
 *     lora-affinity scores from {@code vllm:lora_requests_info}, read by the engine-load scrape) while
 *     they are at most {@code policy.balanceAbsThreshold} requests busier than the least-loaded
 *     candidate. Default true
 * @param aliases public model names mapped to the served names they stand for; a request naming an
 *     alias is routed (and its body's {@code model} rewritten) as the served name
 */
public record ModelsConfig(Duration refreshInterval, int maxCharsPerToken, boolean loraAffinity,
    Map<String, String> aliases) {

  public ModelsConfig {
    Checks.notNull("refreshInterval", refreshInterval, "a duration");
    if (refreshInterval.isNegative()) {
      throw new IllegalArgumentException("refreshInterval: " + Durations.format(refreshInterval)
          + " (expected: 0s = off, or a positive duration)");
    }
    Checks.positive("maxCharsPerToken", maxCharsPerToken);
    aliases = Collections.unmodifiableMap(new LinkedHashMap<>(aliases == null ? Map.of() : aliases));
    for (Map.Entry<String, String> e : aliases.entrySet()) {
      if (e.getKey() == null || e.getKey().isBlank() || e.getValue() == null || e.getValue().isBlank()) {
        throw new IllegalArgumentException("aliases: " + e.getKey() + ": " + e.getValue()
            + " (expected: a public name mapped to a served name, both non-blank)");
      }
      if (aliases.containsKey(e.getValue())) {
        throw new IllegalArgumentException("aliases: " + e.getKey() + " -> " + e.getValue()
            + " is itself an alias (expected: aliases map to served names)");
      }
    }
  }

  /** Discovery every 30s, 128 characters per token at most, no aliases. */
  public static ModelsConfig defaults() {
    return new ModelsConfig(Duration.ofSeconds(30), 128, true, Map.of());
  }

  /** Whether served models are discovered periodically. */
  public boolean refreshEnabled() {
    return !refreshInterval.isZero();
  }
}
