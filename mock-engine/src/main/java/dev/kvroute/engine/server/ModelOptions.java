package dev.kvroute.engine.server;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a mock engine serves besides its first model name, as vLLM's flags set it: more served names
 * for the same base model ({@code --served-model-name a b}), LoRA adapters loaded at start
 * ({@code --lora-modules name=path ...}), how many adapters run at once ({@code --max-loras}), whether
 * adapters may be loaded and unloaded at run time ({@code POST /v1/load_lora_adapter} and
 * {@code /v1/unload_lora_adapter}, which vLLM serves only with
 * {@code VLLM_ALLOW_RUNTIME_LORA_UPDATING=True}), and how long loading an adapter into a slot takes in
 * model time.
 *
 * <p>Immutable and thread-safe.
 *
 * @param aliases further served names of the base model (the first is {@link MockEngineOptions#modelName})
 * @param loraModules adapters loaded at start, name to path, in order
 * @param maxLoras adapters active in one batch at once, {@code >= 1} (vLLM's default 1)
 * @param runtimeLoraUpdating serve the load/unload endpoints
 * @param loraLoadSeconds model seconds to bring an adapter that is not active into a slot, {@code >= 0}
 */
public record ModelOptions(
    List<String> aliases,
    Map<String, String> loraModules,
    int maxLoras,
    boolean runtimeLoraUpdating,
    double loraLoadSeconds) {

  /** One base model name, no adapters, {@code max_loras} 1, no runtime updates, 0.1 s per load. */
  public static final ModelOptions DEFAULT = new ModelOptions(List.of(), Map.of(), 1, false, 0.1);

  public ModelOptions {
    aliases = List.copyOf(Objects.requireNonNull(aliases, "aliases"));
    loraModules = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(loraModules, "loraModules")));
    for (String a : aliases) {
      if (a.isBlank()) {
        throw new IllegalArgumentException("aliases: a blank name (expected: names)");
      }
    }
    for (Map.Entry<String, String> e : loraModules.entrySet()) {
      if (e.getKey().isBlank() || e.getValue() == null || e.getValue().isBlank()) {
        throw new IllegalArgumentException("loraModules: " + e.getKey() + "=" + e.getValue()
            + " (expected: name=path, both non-blank)");
      }
      if (aliases.contains(e.getKey())) {
        throw new IllegalArgumentException("loraModules: " + e.getKey() + " is also a served model name"
            + " (expected: adapter names distinct from the base model's)");
      }
    }
    if (maxLoras < 1) {
      throw new IllegalArgumentException("maxLoras: " + maxLoras + " (expected: >= 1)");
    }
    if (!(loraLoadSeconds >= 0) || Double.isInfinite(loraLoadSeconds)) {
      throw new IllegalArgumentException("loraLoadSeconds: " + loraLoadSeconds + " (expected: >= 0)");
    }
  }

  /**
   * Parses vLLM's {@code --lora-modules} values: each {@code name=path}, or vLLM's JSON form
   * {@code {"name": ..., "path": ...}} is not accepted here.
   *
   * @throws IllegalArgumentException naming the value that is not {@code name=path}
   */
  public static Map<String, String> parseLoraModules(List<String> specs) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String spec : specs) {
      int eq = spec.indexOf('=');
      if (eq <= 0 || eq == spec.length() - 1) {
        throw new IllegalArgumentException("--lora-modules: " + spec + " (expected: name=path)");
      }
      if (out.put(spec.substring(0, eq).trim(), spec.substring(eq + 1).trim()) != null) {
        throw new IllegalArgumentException("--lora-modules: " + spec.substring(0, eq) + " given twice");
      }
    }
    return out;
  }
}
