package dev.kvroute.proxy.config;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Which engine paths API clients may reach through the proxy port: the allow-list. A request whose
 * (normalized) path matches no pattern is answered 404 by the router and never reaches an engine.
 * The router's own {@code /health}, {@code /ready} and {@code /metrics} are answered whatever the
 * list says; the list does not apply to the router's own requests to engines (health checks,
 * {@code /metrics} scrapes, {@code /v1/models} discovery) nor to the admin API.
 *
 * <p>A pattern is a path whose segments are literal, or {@code *} (exactly one segment), or, as the
 * last segment only, {@code **} (one or more segments): {@code /v1/responses/*} matches
 * {@code /v1/responses/resp_1} but neither {@code /v1/responses} nor
 * {@code /v1/responses/resp_1/cancel}; {@code /v1/**} matches every path under {@code /v1/} (what
 * kvroute forwarded before it had a list). The entry {@code default} stands for
 * {@link #DEFAULT_PATHS}, so {@code [default, /invocations]} adds one path to them.
 *
 * <p>The default is the data plane of vLLM's and SGLang's OpenAI-compatible servers: generation,
 * embedding, pooling, scoring, reranking, transcription and tokenizing endpoints, which read the
 * model but change nothing in the engine. Left out: engine control ({@code /v1/load_lora_adapter},
 * {@code /v1/unload_lora_adapter}, {@code /sleep}, {@code /wake_up}, {@code /reset_prefix_cache},
 * {@code /collective_rpc}, {@code /start_profile}, {@code /pause}; SGLang's {@code /flush_cache},
 * {@code /update_weights_from_disk}, {@code /abort_request}...), engine introspection
 * ({@code /metrics}, {@code /load}, {@code /version}, {@code /server_info}, {@code /get_server_info}),
 * and deployment-specific aliases ({@code /ping}, {@code /invocations}).
 *
 * <p>Immutable and thread-safe.
 *
 * @param allowedPaths the patterns, in any order; may be empty (then only the router's own paths are
 *     served)
 */
public record ApiConfig(List<String> allowedPaths) {
  /** The keyword that stands for {@link #DEFAULT_PATHS} in {@code allowedPaths}. */
  public static final String DEFAULT = "default";

  /** The data-plane paths API clients reach by default. */
  public static final List<String> DEFAULT_PATHS = List.of(
      "/v1/chat/completions",
      "/v1/completions",
      "/v1/embeddings",
      "/v1/models",
      "/v1/responses",
      "/v1/responses/*",
      "/v1/responses/*/cancel",
      "/v1/messages",
      "/v1/audio/transcriptions",
      "/v1/audio/translations",
      "/v1/score",
      "/v1/rerank",
      "/v2/rerank",
      "/score",
      "/rerank",
      "/pooling",
      "/classify",
      "/tokenize",
      "/detokenize",
      "/generate");

  public ApiConfig {
    allowedPaths = List.copyOf(Checks.notNull("allowedPaths", allowedPaths, "a list of paths"));
    for (String p : allowedPaths) {
      checkPattern(p);
    }
  }

  /** {@link #DEFAULT_PATHS}. */
  public static ApiConfig defaults() {
    return new ApiConfig(DEFAULT_PATHS);
  }

  /** The patterns with {@code default} replaced by {@link #DEFAULT_PATHS}, without duplicates. */
  public List<String> effectivePaths() {
    Set<String> out = new LinkedHashSet<>();
    for (String p : allowedPaths) {
      if (p.equals(DEFAULT)) {
        out.addAll(DEFAULT_PATHS);
      } else {
        out.add(p);
      }
    }
    return new ArrayList<>(out);
  }

  private static void checkPattern(String p) {
    String expected = " (expected: default, or a path such as /v1/chat/completions whose segments may be * or, last, **)";
    if (p == null) {
      throw new IllegalArgumentException("allowedPaths: null" + expected);
    }
    if (p.equals(DEFAULT)) {
      return;
    }
    if (!p.startsWith("/") || p.length() < 2 || p.endsWith("/")) {
      throw new IllegalArgumentException("allowedPaths: " + p + expected);
    }
    String[] segments = p.substring(1).split("/", -1);
    for (int i = 0; i < segments.length; i++) {
      String s = segments[i];
      boolean ok = !s.isEmpty() && !s.equals(".") && !s.equals("..")
          && (s.equals("*") || (s.equals("**") ? i == segments.length - 1 : s.indexOf('*') < 0));
      for (int j = 0; ok && j < s.length(); j++) {
        char c = s.charAt(j);
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
            || "-._~!$&'()*+,=:@".indexOf(c) >= 0;
      }
      if (!ok) {
        throw new IllegalArgumentException("allowedPaths: " + p + expected);
      }
    }
  }
}
