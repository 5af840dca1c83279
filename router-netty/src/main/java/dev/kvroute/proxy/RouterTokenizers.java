package dev.kvroute.proxy;

import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.TokenizerRegistry;
import dev.kvroute.core.tokenize.TokenizerSpec;
import dev.kvroute.proxy.config.ConfigException;
import dev.kvroute.proxy.config.RoutingConfig;
import java.io.IOException;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Loads the router's tokenizers from the routing configuration at start-up: {@code
 * routing.tokenizer} for every model, {@code routing.tokenizers} per model name. Each distinct spec
 * is loaded once (models sharing a tokenizer share its cache). A missing or corrupt file, or a
 * directory without a chat template, is a {@link ConfigException} naming the setting and the file,
 * raised before the server listens. A model whose spec is {@code engine} gets {@code o200k_base} here:
 * the proxy asks the engine first ({@link EngineTokenizer}) and routes on these tokens when the engine
 * does not answer.
 */
final class RouterTokenizers {
  private RouterTokenizers() {}

  static TokenizerRegistry load(RoutingConfig routing) {
    Map<String, PromptTokenizer> loaded = new HashMap<>();
    PromptTokenizer fallback = load("routing.tokenizer", routing.tokenizer(), loaded);
    Map<String, PromptTokenizer> byModel = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : routing.tokenizers().entrySet()) {
      byModel.put(e.getKey(), load("routing.tokenizers." + e.getKey(), e.getValue(), loaded));
    }
    return TokenizerRegistry.of(fallback, byModel);
  }

  private static PromptTokenizer load(String field, String spec, Map<String, PromptTokenizer> loaded) {
    PromptTokenizer done = loaded.get(spec);
    if (done != null) {
      return done;
    }
    TokenizerSpec parsed;
    try {
      parsed = TokenizerSpec.parse(spec);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(field + ": " + e.getMessage(), e);
    }
    if (parsed.kind() == TokenizerSpec.Kind.ENGINE) {
      parsed = TokenizerSpec.DEFAULT; // the fallback of the engine's /tokenize
    }
    PromptTokenizer t;
    try {
      t = parsed.load(InstantSource.system(), PromptTokenizer.DEFAULT_CACHE_BYTES);
    } catch (IllegalArgumentException | IOException e) {
      throw new ConfigException(field + ": " + e.getMessage(), e);
    }
    loaded.put(spec, t);
    return t;
  }

  /** Whether {@code routing} asks the engine for any model's tokens. */
  static boolean anyEngine(RoutingConfig routing) {
    return isEngine(routing.tokenizer()) || routing.tokenizers().values().stream().anyMatch(RouterTokenizers::isEngine);
  }

  /** The models whose {@code routing.tokenizers} entry is {@code engine} ({@code engine == true}) or not. */
  static java.util.Set<String> models(RoutingConfig routing, boolean engine) {
    java.util.Set<String> out = new java.util.HashSet<>();
    for (Map.Entry<String, String> e : routing.tokenizers().entrySet()) {
      if (isEngine(e.getValue()) == engine) {
        out.add(e.getKey());
      }
    }
    return out;
  }

  static boolean isEngine(String spec) {
    return spec != null && spec.strip().equalsIgnoreCase("engine");
  }
}
