package dev.kvroute.proxy.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class RoutingConfigTest {
  private static RoutingConfig withTokenizers(Map<String, String> tokenizers) {
    return new RoutingConfig("x-session-id", "user", "o200k_base", 16, 1_000_000, tokenizers);
  }

  @Test
  void modelTokenizerWithABlankModelNameWasAcceptedAndMatchedNoRequest() {
    for (String blank : new String[] {"", " "}) {
      assertThatThrownBy(() -> withTokenizers(Map.of(blank, "engine")))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("expected: a model name before the =");
    }
    assertThat(withTokenizers(Map.of("qwen", "engine")).tokenizers()).containsEntry("qwen", "engine");
  }
}
