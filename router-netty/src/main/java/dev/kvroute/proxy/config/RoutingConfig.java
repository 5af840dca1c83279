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
 * @param tokenizer how prompts are tokenized for every model without an entry in {@code tokenizers}:
 *     a jtokkit encoding ({@code o200k_base}, the default, or {@code cl100k_base}), {@code hf:PATH}
 *     (the model's tokenizer.json and chat template: the engine's exact tokens) or {@code engine}
 *     (the engine's {@code /tokenize}); see {@code TokenizerSpec}
 * @param pageSizeTokens prefix-index page size in tokens: the engines' KV block size (vLLM: 16), or in
 *     approximate mode any size (a backend is credited with a prefix in whole pages); {@link #defaults()}
 *     has 16, a configuration read by {@link ConfigLoader} in approximate mode {@value
 *     #APPROXIMATE_PAGE_SIZE_TOKENS}
 * @param defaultCapacityTokens KV capacity assumed for a backend whose capacity is neither configured
 *     nor readable from its {@code /metrics}
 * @param tokenizers the tokenizer of each model by name, same forms as {@code tokenizer}; empty by
 *     default. A request takes its {@code model}'s entry, else its served model's (an alias applied),
 *     else its base model's (a LoRA adapter's parent)
 * @param tokenizerTimeout with {@code engine}: how long the router waits for the engine's
 *     {@code /tokenize} before it routes the request on {@code o200k_base} tokens instead (counted in
 *     {@code kvroute_tokenizer_fallbacks_total{reason="timeout"}}). Default 200ms
 * @param tokenizerReuse with {@code engine}: the largest share (0 to 1) of a chat request's message
 *     bytes that may be new since the engine last tokenized a prefix of the same conversation for the
 *     router to route on that earlier answer's stable tokens without asking again; {@code 0} asks the
 *     engine for every request it has not tokenized verbatim. Default 0.25 (see docs/operations.md,
 *     "The tokenizer")
 */
public record RoutingConfig(
    String sessionHeader,
    String sessionField,
    String tokenizer,
    int pageSizeTokens,
    long defaultCapacityTokens,
    java.util.Map<String, String> tokenizers,
    java.time.Duration tokenizerTimeout,
    double tokenizerReuse) {

  /** The configuration without the engine tokenizer's settings (their defaults). */
  public RoutingConfig(String sessionHeader, String sessionField, String tokenizer, int pageSizeTokens,
      long defaultCapacityTokens, java.util.Map<String, String> tokenizers) {
    this(sessionHeader, sessionField, tokenizer, pageSizeTokens, defaultCapacityTokens, tokenizers,
        DEFAULT_TOKENIZER_TIMEOUT, DEFAULT_TOKENIZER_REUSE);
  }

  /**
   * The page of the approximate index when the configuration gives none ({@link ConfigLoader}): 64
   * tokens, four of vLLM's default 16-token blocks. Routing walks each prompt's pages three times
   * (match, pinning insert, release); a quarter of the pages took cache-aware's CPU per request from
   * 61 to 49 µs on 22 KB chat prompts and the index's memory from 7.4 to 1.85 bytes per cached token,
   * with the same routing in the simulator (docs/performance.md, "The approximate index's page"). A
   * backend is credited in whole pages: up to 63 tokens of a match are not counted, and a prompt under
   * 64 tokens matches nothing.
   */
  public static final int APPROXIMATE_PAGE_SIZE_TOKENS = 64;

  /** Default {@code tokenizerTimeout}: 200 ms. */
  public static final java.time.Duration DEFAULT_TOKENIZER_TIMEOUT = java.time.Duration.ofMillis(200);

  /** Default {@code tokenizerReuse}: a quarter of the messages' bytes. */
  public static final double DEFAULT_TOKENIZER_REUSE = 0.25;

  public RoutingConfig {
    Checks.nonBlank("sessionHeader", sessionHeader);
    Checks.nonBlank("sessionField", sessionField);
    Checks.nonBlank("tokenizer", tokenizer);
    spec("tokenizer", tokenizer);
    tokenizers = tokenizers == null ? java.util.Map.of() : java.util.Map.copyOf(tokenizers);
    for (java.util.Map.Entry<String, String> e : tokenizers.entrySet()) {
      if (e.getKey().isBlank()) {
        throw new IllegalArgumentException("tokenizers: \"" + e.getKey() + "\"=" + e.getValue()
            + " (expected: a model name before the =, as requests give it in \"model\")");
      }
      spec("tokenizers." + e.getKey(), e.getValue());
    }
    Checks.range("pageSizeTokens", pageSizeTokens, 1, 4096);
    Checks.positive("defaultCapacityTokens", defaultCapacityTokens);
    Checks.positive("tokenizerTimeout", tokenizerTimeout);
    if (!(tokenizerReuse >= 0 && tokenizerReuse <= 1)) {
      throw new IllegalArgumentException("tokenizerReuse: " + tokenizerReuse + " (expected: 0 to 1)");
    }
  }

  /** This configuration with the prefix index's page replaced. */
  public RoutingConfig withPageSizeTokens(int pageSizeTokens) {
    return new RoutingConfig(sessionHeader, sessionField, tokenizer, pageSizeTokens, defaultCapacityTokens, tokenizers,
        tokenizerTimeout, tokenizerReuse);
  }

  /** This configuration with the engine tokenizer's deadline and reuse share replaced. */
  public RoutingConfig withEngineTokenizer(java.time.Duration timeout, double reuse) {
    return new RoutingConfig(sessionHeader, sessionField, tokenizer, pageSizeTokens, defaultCapacityTokens, tokenizers,
        timeout, reuse);
  }

  /**
   * {@code x-session-id}, {@code user}, {@code o200k_base}, 16-token pages, 524288 tokens per backend,
   * a 200 ms engine-tokenizer deadline and a reuse share of 0.25.
   */
  public static RoutingConfig defaults() {
    return new RoutingConfig("x-session-id", "user", "o200k_base", 16, 524_288, java.util.Map.of(),
        DEFAULT_TOKENIZER_TIMEOUT, DEFAULT_TOKENIZER_REUSE);
  }

  private static void spec(String field, String value) {
    try {
      dev.kvroute.core.tokenize.TokenizerSpec.parse(value);
    } catch (IllegalArgumentException e) {
      throw new ConfigException("routing." + field + ": " + value
          + " (expected: o200k_base, cl100k_base, p50k_base, r50k_base, hf:PATH or engine)");
    }
  }
}
