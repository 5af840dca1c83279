package dev.kvroute.proxy.config;

/**
 * How the router reads requests for routing and sizes its prefix index.
 *
 * <p>Immutable and thread-safe.
 *
 * @param sessionHeader request header carrying a session key (sticky routing, logs); else the body's
 *     {@code user} field is used
 * @param sessionField body field carrying the session key when the header is absent; a dotted path
 *     reaches into objects (e.g. {@code metadata.session_id}). Default {@code user}
 * @param tokenizer jtokkit encoding used to tokenize prompts: {@code o200k_base} (default) or
 *     {@code cl100k_base}
 * @param pageSizeTokens prefix-index page size in tokens; match the engines' KV block size (vLLM: 16)
 * @param defaultCapacityTokens KV capacity assumed for a backend whose capacity is neither configured
 *     nor readable from its {@code /metrics}
 */
public record RoutingConfig(
    String sessionHeader,
    String sessionField,
    String tokenizer,
    int pageSizeTokens,
    long defaultCapacityTokens) {

  public RoutingConfig {
    Checks.nonBlank("sessionHeader", sessionHeader);
    Checks.nonBlank("sessionField", sessionField);
    Checks.nonBlank("tokenizer", tokenizer);
    Checks.range("pageSizeTokens", pageSizeTokens, 1, 4096);
    Checks.positive("defaultCapacityTokens", defaultCapacityTokens);
  }

  /** {@code x-session-id}, {@code user}, {@code o200k_base}, 16-token pages, 524288 tokens per backend. */
  public static RoutingConfig defaults() {
    return new RoutingConfig("x-session-id", "user", "o200k_base", 16, 524_288);
  }
}
