package dev.kvroute.engine.server;

import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.kvevents.KvEventsConfig;
import dev.kvroute.engine.model.EngineConfig;
import java.util.List;
import java.util.Objects;

/**
 * How to run a mock engine (or each replica of a fleet). Build with {@link #builder()}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param host address to bind, e.g. {@code 127.0.0.1} or {@code 0.0.0.0}
 * @param port port to bind; 0 picks a free one (a fleet then picks one per replica), otherwise
 *     replica {@code i} of a fleet binds {@code port + i}
 * @param modelName the served model name ({@code model} field, {@code /v1/models}, metric label)
 * @param engine the engine model's configuration
 * @param timeScale model seconds per wall-clock second (K); every reported time is in model seconds
 * @param enablePromptTokensDetails report {@code usage.prompt_tokens_details.cached_tokens}, as vLLM's
 *     {@code --enable-prompt-tokens-details}
 * @param seed seed of the generated text (and of the fault draw)
 * @param meanOutputTokens mean natural reply length when {@code ignore_eos} is not set (see {@link
 *     ReplyGenerator})
 * @param tokenizer jtokkit encoding of the prompt tokenizer and the reply vocabulary (router-core's
 *     {@code PromptTokenizer} chat template)
 * @param fault fault for generation requests without an {@code X-Mock-Fault} header
 * @param faultProbability fraction 0..1 of those requests that get {@code fault}
 * @param health how {@code /health} answers at start
 * @param maxBodyBytes largest accepted request body; larger ones get 413
 * @param ioThreads event-loop threads of a fleet (each replica lives on one of them); 0 means {@code
 *     min(replicas, available processors)}
 * @param kvEvents how the engine publishes vLLM's KV events ({@code --kv-events-config}); {@link
 *     KvEventsConfig#DISABLED} by default. Replica {@code i} of a fleet offsets the endpoints' ports by
 *     {@code i}, as vLLM's data-parallel rank {@code i} does.
 * @param models further served names, LoRA adapters and their limits (see {@link ModelOptions})
 */
public record MockEngineOptions(
    String host,
    int port,
    String modelName,
    EngineConfig engine,
    double timeScale,
    boolean enablePromptTokensDetails,
    long seed,
    double meanOutputTokens,
    String tokenizer,
    FaultPlan fault,
    double faultProbability,
    HealthFault health,
    int maxBodyBytes,
    int ioThreads,
    KvEventsConfig kvEvents,
    ModelOptions models) {

  /** Every served name of the base model: {@link #modelName} first, then the aliases. */
  public List<String> servedModelNames() {
    List<String> out = new java.util.ArrayList<>();
    out.add(modelName);
    out.addAll(models.aliases());
    return out;
  }

  /** Default served model name. */
  public static final String DEFAULT_MODEL = "kvroute/mock-llm";

  public MockEngineOptions {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(modelName, "modelName");
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(tokenizer, "tokenizer");
    Objects.requireNonNull(fault, "fault");
    Objects.requireNonNull(health, "health");
    Objects.requireNonNull(kvEvents, "kvEvents");
    Objects.requireNonNull(models, "models");
    if (models.aliases().contains(modelName) || models.loraModules().containsKey(modelName)) {
      throw new IllegalArgumentException("modelName: " + modelName + " is also in models (expected: each name once)");
    }
    if (port < 0 || port > 65535) {
      throw new IllegalArgumentException("port: " + port + " (expected: 0..65535)");
    }
    if (modelName.isBlank()) {
      throw new IllegalArgumentException("modelName: blank (expected: a name)");
    }
    if (!(timeScale > 0) || Double.isInfinite(timeScale)) {
      throw new IllegalArgumentException("timeScale: " + timeScale + " (expected: > 0)");
    }
    if (!(meanOutputTokens >= 1)) {
      throw new IllegalArgumentException("meanOutputTokens: " + meanOutputTokens + " (expected: >= 1)");
    }
    if (!(faultProbability >= 0 && faultProbability <= 1)) {
      throw new IllegalArgumentException("faultProbability: " + faultProbability + " (expected: 0..1)");
    }
    if (maxBodyBytes <= 0) {
      throw new IllegalArgumentException("maxBodyBytes: " + maxBodyBytes + " (expected: > 0)");
    }
    if (ioThreads < 0) {
      throw new IllegalArgumentException("ioThreads: " + ioThreads + " (expected: >= 0)");
    }
  }

  /** A builder with defaults: 127.0.0.1, port 0, time scale 1, continuous scheduler, no faults. */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder starting from these options. */
  public Builder toBuilder() {
    Builder b = new Builder();
    b.host = host;
    b.port = port;
    b.modelName = modelName;
    b.engine = engine;
    b.timeScale = timeScale;
    b.enablePromptTokensDetails = enablePromptTokensDetails;
    b.seed = seed;
    b.meanOutputTokens = meanOutputTokens;
    b.tokenizer = tokenizer;
    b.fault = fault;
    b.faultProbability = faultProbability;
    b.health = health;
    b.maxBodyBytes = maxBodyBytes;
    b.ioThreads = ioThreads;
    b.kvEvents = kvEvents;
    b.models = models;
    return b;
  }

  /** Builds {@link MockEngineOptions}. Not thread-safe. */
  public static final class Builder {
    private String host = "127.0.0.1";
    private int port;
    private String modelName = DEFAULT_MODEL;
    private EngineConfig engine = EngineConfig.builder().build();
    private double timeScale = 1.0;
    private boolean enablePromptTokensDetails;
    private long seed;
    private double meanOutputTokens = 128;
    private String tokenizer = Tokenizer.DEFAULT_ENCODING;
    private FaultPlan fault = FaultPlan.NONE;
    private double faultProbability = 1.0;
    private HealthFault health = HealthFault.OK;
    private int maxBodyBytes = 64 << 20;
    private int ioThreads;
    private KvEventsConfig kvEvents = KvEventsConfig.DISABLED;
    private ModelOptions models = ModelOptions.DEFAULT;

    private Builder() {}

    public Builder models(ModelOptions models) {
      this.models = models;
      return this;
    }

    public Builder host(String host) {
      this.host = host;
      return this;
    }

    public Builder port(int port) {
      this.port = port;
      return this;
    }

    public Builder modelName(String modelName) {
      this.modelName = modelName;
      return this;
    }

    public Builder engine(EngineConfig engine) {
      this.engine = engine;
      return this;
    }

    public Builder timeScale(double timeScale) {
      this.timeScale = timeScale;
      return this;
    }

    public Builder enablePromptTokensDetails(boolean enable) {
      this.enablePromptTokensDetails = enable;
      return this;
    }

    public Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    public Builder meanOutputTokens(double meanOutputTokens) {
      this.meanOutputTokens = meanOutputTokens;
      return this;
    }

    public Builder tokenizer(String encoding) {
      this.tokenizer = encoding;
      return this;
    }

    public Builder fault(FaultPlan fault) {
      this.fault = fault;
      return this;
    }

    public Builder faultProbability(double faultProbability) {
      this.faultProbability = faultProbability;
      return this;
    }

    public Builder health(HealthFault health) {
      this.health = health;
      return this;
    }

    public Builder maxBodyBytes(int maxBodyBytes) {
      this.maxBodyBytes = maxBodyBytes;
      return this;
    }

    public Builder ioThreads(int ioThreads) {
      this.ioThreads = ioThreads;
      return this;
    }

    /** vLLM's KV events: publish them as this configuration says (see {@link KvEventsConfig#ephemeral}). */
    public Builder kvEvents(KvEventsConfig kvEvents) {
      this.kvEvents = kvEvents;
      return this;
    }

    /**
     * The options.
     *
     * @throws IllegalArgumentException if a value is out of range (the message names it)
     */
    public MockEngineOptions build() {
      return new MockEngineOptions(host, port, modelName, engine, timeScale, enablePromptTokensDetails,
          seed, meanOutputTokens, tokenizer, fault, faultProbability, health, maxBodyBytes, ioThreads, kvEvents,
          models);
    }
  }
}
