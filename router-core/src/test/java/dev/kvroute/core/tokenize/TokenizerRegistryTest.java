package dev.kvroute.core.tokenize;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each request goes to its model's tokenizer; other models and requests without one to the default. */
class TokenizerRegistryTest {
  private static RequestView chat(String model) {
    return new RequestView(Endpoint.CHAT_COMPLETIONS, model, null, List.of(PromptSegment.text("user", "hello")), false, -1);
  }

  @Test
  void requestsAreTokenizedWithTheirModelsTokenizer() {
    PromptTokenizer o200k = PromptTokenizer.create(Tokenizer.jtokkit("o200k_base"));
    PromptTokenizer cl100k = PromptTokenizer.create(Tokenizer.jtokkit("cl100k_base"));
    TokenizerRegistry registry = TokenizerRegistry.of(o200k, Map.of("gpt-4", cl100k));
    PromptTokenizer routed = registry.asPromptTokenizer();
    assertThat(routed.tokenize(chat("gpt-4"))).isEqualTo(cl100k.tokenize(chat("gpt-4")));
    assertThat(routed.tokenize(chat("other"))).isEqualTo(o200k.tokenize(chat("other")));
    assertThat(routed.tokenize(chat(null))).isEqualTo(o200k.tokenize(chat(null)));
    assertThat(o200k.tokenize(chat("x"))).isNotEqualTo(cl100k.tokenize(chat("x")));
    assertThat(registry.forModel("gpt-4")).isSameAs(cl100k);
    assertThat(registry.models()).containsExactly("gpt-4");
    assertThat(TokenizerRegistry.single(o200k).asPromptTokenizer()).isSameAs(o200k);
  }

  @Test
  void theColdPromptEstimateIsTheModelsTokenizers() {
    PromptTokenizer o200k = PromptTokenizer.create(Tokenizer.jtokkit("o200k_base"));
    PromptTokenizer cl100k = PromptTokenizer.create(Tokenizer.jtokkit("cl100k_base"));
    PromptTokenizer routed = TokenizerRegistry.of(o200k, Map.of("gpt-4", cl100k)).asPromptTokenizer();
    assertThat(routed.uncachedCodePoints(chat("gpt-4"))).isEqualTo("hello".length());
    cl100k.tokenizePrefixed(chat("gpt-4")).remember(dev.kvroute.core.index.PageHashes.NONE);
    assertThat(routed.uncachedCodePoints(chat("gpt-4"))).as("kept by gpt-4's tokenizer").isZero();
    assertThat(routed.uncachedCodePoints(chat("other"))).as("not by the default's").isEqualTo("hello".length());
  }
}
