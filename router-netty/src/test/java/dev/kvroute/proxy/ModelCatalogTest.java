package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.CircuitBreakerConfig;
import dev.kvroute.proxy.config.ConfigLoader;
import dev.kvroute.proxy.config.ModelsConfig;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** What the router makes of a fleet's models: discovery bodies, resolution, rewrite, length bound. */
class ModelCatalogTest {
  static final String VLLM_B = "{\"object\":\"list\",\"data\":["
      + "{\"id\":\"model-b\",\"object\":\"model\",\"root\":\"/models/b\",\"parent\":null,\"max_model_len\":8192},"
      + "{\"id\":\"sql\",\"object\":\"model\",\"root\":\"/loras/sql\",\"parent\":\"model-b\"}]}";

  static Backend backend(String name, ServedModels models) {
    Backend b = new Backend(new BackendConfig(URI.create("http://127.0.0.1:1/" + name), name, 0),
        new CircuitBreaker(new CircuitBreakerConfig(true, 3, Duration.ofSeconds(10), 2), () -> 0, (x, y) -> {}), 1000);
    b.models(models);
    return b;
  }

  static ServedModels parse(String json) throws IOException {
    return ServedModels.parseModelList(json.getBytes(StandardCharsets.UTF_8));
  }

  static RequestView chat(String model, String text, int maxTokens) {
    return new RequestView(Endpoint.CHAT_COMPLETIONS, model, null, List.of(PromptSegment.text("user", text)), false,
        maxTokens);
  }

  final ModelCatalog catalog = new ModelCatalog(new ModelsConfig(Duration.ofSeconds(30), 4, true, Map.of("pub", "model-a")));

  @Test
  void vllmCardsGiveAdaptersTheirParentsContextLength() throws Exception {
    ServedModels m = parse(VLLM_B);
    assertThat(m.card("sql").adapter()).isTrue();
    assertThat(m.maxModelLen("sql")).isEqualTo(8192);
    assertThat(m.maxModelLen("model-b")).isEqualTo(8192);
    assertThat(m.baseModels()).containsExactly("model-b");
    assertThat(m.adapters()).containsExactly("sql");
    assertThat(m.known()).isTrue();
    assertThatThrownBy(() -> parse("{\"data\":[{\"object\":\"model\"}]}")).isInstanceOf(IOException.class);
    assertThatThrownBy(() -> parse("{\"detail\":\"Not Found\"}")).isInstanceOf(IOException.class);
    assertThat(ServedModels.parseSglangModelInfo("{\"model_path\":\"Qwen/Qwen2.5-7B\",\"is_generation\":true}"
        .getBytes(StandardCharsets.UTF_8)).cards()).containsOnlyKeys("Qwen/Qwen2.5-7B");
  }

  @Test
  void candidatesAreTheBackendsServingTheModelAndTheUnreadOnes() throws Exception {
    Backend a = backend("a", ServedModels.configured(List.of("model-a")));
    Backend b = backend("b", parse(VLLM_B));
    Backend unread = backend("c", ServedModels.UNKNOWN);
    ModelCatalog.Resolved sql = catalog.resolve(chat("sql", "hi", 8), () -> new byte[0], List.of(a, b, unread));
    assertThat(sql.serving()).containsExactlyInAnyOrder(b.id(), unread.id());
    assertThat(sql.base()).isEqualTo("model-b");
    assertThat(sql.adapter()).isEqualTo("sql");
    assertThat(sql.namespace()).isEqualTo(PrefixIndex.namespace("sql"));
    assertThat(sql.unknown()).isFalse();
    assertThat(sql.maxModelLen()).isEqualTo(-1); // the unread backend's context is unknown
    assertThat(sql.label()).isEqualTo("sql");
    ModelCatalog.Resolved nope = catalog.resolve(chat("nope", "hi", 8), () -> new byte[0], List.of(a, b, unread));
    assertThat(nope.unknown()).isFalse(); // the unread backend may serve it
    assertThat(nope.label()).isEqualTo(ModelCatalog.OTHER_LABEL);
    ModelCatalog.Resolved known = catalog.resolve(chat("nope", "hi", 8), () -> new byte[0], List.of(a, b));
    assertThat(known.unknown()).isTrue();
    assertThat(known.serving()).isEmpty();
  }

  @Test
  void aRememberedResolutionFollowsTheFleetsModels() throws Exception {
    Backend a = backend("a", ServedModels.configured(List.of("model-a")));
    Backend b = backend("b", ServedModels.UNKNOWN);
    List<Backend> fleet = List.of(a, b);
    ModelCatalog.Resolved first = catalog.resolve(chat("sql", "hi", 8), () -> new byte[0], fleet);
    assertThat(first.serving()).containsExactly(b.id()); // b's models unread: it may serve sql
    assertThat(catalog.resolve(chat("sql", "bye", 8), () -> new byte[0], fleet)).as("remembered").isSameAs(first);
    b.models(ServedModels.configured(List.of("model-b"))); // discovery read b: no sql anywhere
    ModelCatalog.Resolved after = catalog.resolve(chat("sql", "hi", 8), () -> new byte[0], fleet);
    assertThat(after.unknown()).isTrue();
    assertThat(catalog.resolve(chat("sql", "hi", 8), () -> new byte[0], List.of(a))).as("another fleet")
        .isNotSameAs(after);
    // the alias's rewrite depends on the body: never remembered
    byte[] body = "{\"model\":\"pub\"}".getBytes(StandardCharsets.UTF_8);
    assertThat(catalog.resolve(chat("pub", "x", 8), () -> body, fleet))
        .isNotSameAs(catalog.resolve(chat("pub", "x", 8), () -> body, fleet));
  }

  @Test
  void anAdapterOrAnAliasIsTokenizedAsItsBaseOrServedModelUnlessNamedItself() throws Exception {
    ModelCatalog tokenizing = new ModelCatalog(new ModelsConfig(Duration.ofSeconds(30), 4, true,
        Map.of("pub", "model-a", "own", "model-b")), Set.of("model-a", "model-b", "own"));
    List<Backend> fleet = List.of(backend("a", ServedModels.configured(List.of("model-a"))), backend("b", parse(VLLM_B)));
    byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
    assertThat(tokenizing.resolve(chat("sql", "hi", 8), () -> body, fleet).tokenizerModel()).isEqualTo("model-b");
    assertThat(tokenizing.resolve(chat("pub", "hi", 8), () -> body, fleet).tokenizerModel()).isEqualTo("model-a");
    assertThat(tokenizing.resolve(chat("own", "hi", 8), () -> body, fleet).tokenizerModel()).isEqualTo("own");
    assertThat(tokenizing.resolve(chat("model-a", "hi", 8), () -> body, fleet).tokenizerModel()).isEqualTo("model-a");
    RequestView adapter = chat("sql", "hi", 8);
    RequestView tokenized = tokenizing.resolve(adapter, () -> body, fleet).tokenized(adapter);
    assertThat(tokenized.model()).isEqualTo("model-b");
    assertThat(tokenized.segments()).isEqualTo(adapter.segments());
    // without per-model tokenizers the view goes to the core as it is
    assertThat(catalog.resolve(adapter, () -> body, fleet).tokenized(adapter)).isSameAs(adapter);
  }

  @Test
  void aLongRequestedNameIsNotRemembered() {
    List<Backend> fleet = List.of(backend("a", ServedModels.configured(List.of("model-a"))));
    String shortName = "x".repeat(ModelCatalog.MEMO_NAME_CHARS);
    String longName = "x".repeat(ModelCatalog.MEMO_NAME_CHARS + 1);
    assertThat(catalog.resolve(chat(shortName, "x", 8), () -> new byte[0], fleet))
        .isSameAs(catalog.resolve(chat(shortName, "x", 8), () -> new byte[0], fleet));
    assertThat(catalog.resolve(chat(longName, "x", 8), () -> new byte[0], fleet))
        .isNotSameAs(catalog.resolve(chat(longName, "x", 8), () -> new byte[0], fleet));
  }

  @Test
  void aRequestWithoutModelGoesAnywhereInTheOneBaseModelsNamespace() throws Exception {
    Backend b0 = backend("b0", parse(VLLM_B));
    Backend b1 = backend("b1", parse(VLLM_B));
    ModelCatalog.Resolved r = catalog.resolve(chat(null, "hi", 8), () -> new byte[0], List.of(b0, b1));
    assertThat(r.serving()).containsExactlyInAnyOrder(BackendId.of("b0"), BackendId.of("b1"));
    assertThat(r.namespace()).isEqualTo(PrefixIndex.namespace(null));
    assertThat(r.label()).isEqualTo("none");
  }

  @Test
  void anAliasRewritesOnlyTheTopLevelModelString() {
    String body = "{\"messages\":[{\"role\":\"user\",\"content\":\"model\",\"model\":\"pub\"}],\n  \"model\" : \"pub\","
        + "\"temperature\":1.00}";
    Backend a = backend("a", ServedModels.configured(List.of("model-a")));
    ModelCatalog.Resolved r = catalog.resolve(chat("pub", "x", 8), () -> body.getBytes(StandardCharsets.UTF_8), List.of(a));
    assertThat(r.served()).isEqualTo("model-a");
    assertThat(new String(r.rewrittenBody(), StandardCharsets.UTF_8)).isEqualTo(
        "{\"messages\":[{\"role\":\"user\",\"content\":\"model\",\"model\":\"pub\"}],\n  \"model\" : \"model-a\","
            + "\"temperature\":1.00}");
    assertThat(catalog.resolve(chat("model-a", "x", 8), () -> body.getBytes(StandardCharsets.UTF_8), List.of(a))
        .rewrittenBody()).isNull();
    assertThat(new String(ModelCatalog.rewriteModel("{\"model\":\"p\\u0075b\"}".getBytes(StandardCharsets.UTF_8),
        "a\"b"), StandardCharsets.UTF_8)).isEqualTo("{\"model\":\"a\\\"b\"}");
  }

  @Test
  void anAliasRewritesEveryTopLevelModelStringWhenTheKeyIsDuplicated() {
    // the parser routes on the last "model", and so does the engine's JSON reader
    String body = "{\"model\":\"model-b\",\"messages\":[],\"model\":\"pub\"}";
    assertThat(new String(ModelCatalog.rewriteModel(body.getBytes(StandardCharsets.UTF_8), "model-a"),
        StandardCharsets.UTF_8)).isEqualTo("{\"model\":\"model-a\",\"messages\":[],\"model\":\"model-a\"}");
  }

  @Test
  void theLengthBoundRefusesOnlyPromptsNoTokenizerCanFit() throws Exception {
    Backend b = backend("b", parse(VLLM_B)); // 8192 tokens; 4 characters per token at most here
    ModelCatalog.Resolved r = catalog.resolve(chat("model-b", "x", 100), () -> new byte[0], List.of(b));
    // 8092 input tokens x 4 = 32368 characters fit; one more cannot
    assertThat(catalog.tooLong(chat("model-b", "y".repeat(32_368), 100), r)).isNull();
    assertThat(catalog.tooLong(chat("model-b", "y".repeat(32_369), 100), r)).isEqualTo(
        "This model's maximum context length is 8192 tokens. However, you requested 100 output tokens and your"
            + " prompt contains 32369 characters (more than 32368 characters, which is the upper bound for 8092"
            + " input tokens). Please reduce the length of the input prompt or the number of requested output tokens.");
    // the output alone fills the context: the prompt's lower bound, as vLLM words a truncated count
    assertThat(catalog.tooLong(chat("model-b", "hi", 9000), r)).isEqualTo("This model's maximum context length is"
        + " 8192 tokens. However, you requested 9000 output tokens and your prompt contains at least 1 input tokens,"
        + " for a total of at least 9001 tokens. Please reduce the length of the input prompt or the number of"
        + " requested output tokens.");
    // characters are code points: 32368 emoji are 32368 characters (64736 UTF-16 units)
    String emoji = "\uD83D\uDE00".repeat(32_368);
    assertThat(catalog.tooLong(chat("model-b", emoji, 100), r)).isNull();
    RequestView ids = new RequestView(Endpoint.COMPLETIONS, "model-b", null,
        List.of(PromptSegment.tokens(new int[8177])), false, -1);
    assertThat(catalog.tooLong(ids, r)).isEqualTo("This model's maximum context length is 8192 tokens. However, you"
        + " requested 16 output tokens and your prompt contains 8177 input tokens, for a total of 8193 tokens. Please"
        + " reduce the length of the input prompt or the number of requested output tokens.");
    ModelCatalog.Resolved unknownLen = catalog.resolve(chat("model-a", "x", 1),
        () -> new byte[0], List.of(backend("a", ServedModels.configured(List.of("model-a")))));
    assertThat(catalog.tooLong(chat("model-a", "y".repeat(1_000_000), 1), unknownLen)).isNull();
  }

  @Test
  void theUnionListsEachCardOnceWithTheBackendsServingIt() throws Exception {
    String union = catalog.union(List.of(backend("b0", parse(VLLM_B)), backend("b1", parse(VLLM_B)),
        backend("c", ServedModels.UNKNOWN)));
    assertThat(union).contains("\"id\":\"sql\"", "\"parent\":\"model-b\"", "\"kvroute_backends\":[\"b0\",\"b1\"]");
    long now = System.currentTimeMillis() / 1000;
    com.fasterxml.jackson.databind.JsonNode card = new com.fasterxml.jackson.databind.ObjectMapper().readTree(union)
        .path("data").get(0);
    assertThat(card.path("created").asLong()).as("OpenAI's Model object has created").isBetween(now - 60, now + 60);
    assertThat(catalog.union(List.of(backend("c", ServedModels.UNKNOWN)))).isNull();
  }

  @Test
  void aBackendsModelsAreConfiguredInTheOneLineFormAndYaml() {
    BackendConfig c = BackendConfig.parse("http://10.0.0.5:8000,name=b0,models=model-b|sql");
    assertThat(c.models()).containsExactly("model-b", "sql");
    assertThat(BackendConfig.parse(c.toString())).isEqualTo(c);
    assertThatThrownBy(() -> BackendConfig.parse("http://10.0.0.5:8000,models="))
        .hasMessageStartingWith("models:");
    var cfg = ConfigLoader.parse("backends:\n  - url: http://10.0.0.5:8000\n    models: [a, b]\n"
        + "models:\n  refreshInterval: 0s\n  aliases:\n    chat: a\n", Map.of());
    assertThat(cfg.backends().get(0).models()).containsExactly("a", "b");
    assertThat(cfg.models().aliases()).containsEntry("chat", "a");
    assertThat(cfg.models().refreshEnabled()).isFalse();
    assertThatThrownBy(() -> ConfigLoader.parse("models:\n  aliases:\n    a: b\n    b: c\n", Map.of()))
        .hasMessageContaining("is itself an alias");
  }
}
