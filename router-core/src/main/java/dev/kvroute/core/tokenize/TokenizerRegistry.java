package dev.kvroute.core.tokenize;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The prompt tokenizer of each model: a map from model name (the view's {@code model}, which the proxy
 * sets to the model whose tokenizer applies: an adapter's base model, an alias's served model) to its
 * tokenizer, and a default for every other model and for requests without one. The configuration
 * fills it from {@code --tokenizer} (the default) and the {@code routing.tokenizers} map
 * ({@code modelName: spec}).
 *
 * <p>{@link #asPromptTokenizer()} gives one {@link PromptTokenizer} that hands each request to its
 * model's tokenizer, for a router core that does not know about models.
 *
 * <p>Immutable and thread-safe.
 */
public final class TokenizerRegistry {
  private final PromptTokenizer defaultTokenizer;
  private final Map<String, PromptTokenizer> byModel;

  private TokenizerRegistry(PromptTokenizer defaultTokenizer, Map<String, PromptTokenizer> byModel) {
    this.defaultTokenizer = Objects.requireNonNull(defaultTokenizer, "defaultTokenizer");
    this.byModel = Map.copyOf(byModel);
  }

  /** A registry with {@code defaultTokenizer} for every model not in {@code byModel}. */
  public static TokenizerRegistry of(PromptTokenizer defaultTokenizer, Map<String, PromptTokenizer> byModel) {
    return new TokenizerRegistry(defaultTokenizer, new LinkedHashMap<>(byModel));
  }

  /** A registry with one tokenizer for every model. */
  public static TokenizerRegistry single(PromptTokenizer tokenizer) {
    return new TokenizerRegistry(tokenizer, Map.of());
  }

  /** The tokenizer of {@code model} ({@code null}: the default). */
  public PromptTokenizer forModel(String model) {
    if (model == null) {
      return defaultTokenizer;
    }
    PromptTokenizer t = byModel.get(model);
    return t == null ? defaultTokenizer : t;
  }

  /** The default tokenizer. */
  public PromptTokenizer defaultTokenizer() {
    return defaultTokenizer;
  }

  /** The models with a tokenizer of their own. */
  public java.util.Set<String> models() {
    return byModel.keySet();
  }

  /**
   * One prompt tokenizer that tokenizes each {@link RequestView} with its model's tokenizer; calls
   * without a view (segments, single pieces) go to the default. With no per-model entry it is the
   * default itself.
   */
  public PromptTokenizer asPromptTokenizer() {
    if (byModel.isEmpty()) {
      return defaultTokenizer;
    }
    return new PromptTokenizer() {
      @Override
      public int[] tokenize(RequestView view) {
        return forModel(view.model()).tokenize(view);
      }

      @Override
      public PrefixedTokens tokenizePrefixed(RequestView view) {
        return forModel(view.model()).tokenizePrefixed(view);
      }

      @Override
      public boolean asksForMessageHashes() {
        if (defaultTokenizer.asksForMessageHashes()) {
          return true;
        }
        for (PromptTokenizer t : byModel.values()) {
          if (t.asksForMessageHashes()) {
            return true;
          }
        }
        return false;
      }

      @Override
      public long uncachedCodePoints(RequestView view) {
        return forModel(view.model()).uncachedCodePoints(view);
      }

      @Override
      public KnownLead knownLead(RequestView view) {
        return forModel(view.model()).knownLead(view);
      }

      @Override
      public int[] tokenize(Endpoint endpoint, List<PromptSegment> segments) {
        return defaultTokenizer.tokenize(endpoint, segments);
      }

      @Override
      public int[] encode(String piece) {
        return defaultTokenizer.encode(piece);
      }

      @Override
      public Tokenizer tokenizer() {
        return defaultTokenizer.tokenizer();
      }

      @Override
      public long cachedPieces() {
        long n = defaultTokenizer.cachedPieces();
        for (PromptTokenizer t : byModel.values()) {
          n += t.cachedPieces();
        }
        return n;
      }
    };
  }
}
