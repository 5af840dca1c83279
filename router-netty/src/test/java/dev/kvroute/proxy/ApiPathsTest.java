package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.proxy.config.ApiConfig;
import java.util.List;
import org.junit.jupiter.api.Test;

final class ApiPathsTest {
  final ApiPaths defaults = new ApiPaths(ApiConfig.defaults());

  @Test
  void engineControlPathsWereReachableAndAreNotByDefault() {
    for (String p : List.of("/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/sleep", "/wake_up", "/is_sleeping",
        "/reset_prefix_cache", "/collective_rpc", "/start_profile", "/stop_profile", "/pause", "/resume",
        "/flush_cache", "/update_weights_from_disk", "/get_server_info", "/server_info", "/abort_request",
        "/metrics", "/load", "/version", "/ping", "/invocations", "/v1/loads", "/v1", "/v1/", "/", "/v1/models/",
        "/v1/responses/r1/cancel/x", "/V1/chat/completions", "/v1/chat/completions/")) {
      assertThat(defaults.allows(p)).as(p).isFalse();
    }
  }

  @Test
  void theDataPlaneIsReachableByDefault() {
    for (String p : List.of("/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models", "/v1/responses",
        "/v1/responses/resp_1", "/v1/responses/resp_1/cancel", "/v1/score", "/v1/rerank", "/v2/rerank", "/rerank",
        "/score", "/pooling", "/classify", "/tokenize", "/detokenize", "/generate", "/v1/audio/transcriptions")) {
      assertThat(defaults.allows(p)).as(p).isTrue();
    }
  }

  @Test
  void wildcardsMatchOneSegmentOrAnyTail() {
    ApiPaths p = new ApiPaths(new ApiConfig(List.of("default", "/invocations", "/x/*/y", "/all/**")));
    assertThat(p.allows("/invocations")).isTrue();
    assertThat(p.allows("/v1/chat/completions")).as("default kept").isTrue();
    assertThat(p.allows("/x/a/y")).isTrue();
    assertThat(p.allows("/x/a/b/y")).isFalse();
    assertThat(p.allows("/x//y")).isFalse();
    assertThat(p.allows("/all")).isFalse();
    assertThat(p.allows("/all/a")).isTrue();
    assertThat(p.allows("/all/a/b/c")).isTrue();
    assertThat(p.allows("/all/a/")).isTrue();
    assertThat(new ApiPaths(new ApiConfig(List.of())).allows("/v1/chat/completions")).isFalse();
  }

  @Test
  void aPlainPatternAllowsThatPathAlone() {
    ApiPaths p = new ApiPaths(new ApiConfig(List.of("/v1/chat/completions")));
    assertThat(p.allows("/v1/chat/completions")).isTrue();
    for (String near : List.of("/v1/chat/completions/", "/v1/chat/completionsx", "/V1/chat/completions",
        "/v1/chat", "//v1/chat/completions", "/v1/chat/completions/x")) {
      assertThat(p.allows(near)).as(near).isFalse();
    }
  }

  @Test
  void badPatternsAreRefusedWithWhatWasExpected() {
    for (String bad : List.of("v1/x", "/", "/v1/", "/v1//x", "/v1/../x", "/v1/./x", "/**/x", "/v1/a*", "/v1/x?y=1",
        "/v1/%2e", "/v1/a;b", "/v1/a\\b", "defaults")) {
      assertThatThrownBy(() -> new ApiConfig(List.of(bad))).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("allowedPaths: " + bad)
          .hasMessageContaining("expected: default, or a path");
    }
  }
}
