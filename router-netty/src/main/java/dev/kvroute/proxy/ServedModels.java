package dev.kvroute.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one backend serves: its model cards by name, as its {@code GET /v1/models} lists them (vLLM:
 * a card per served name of the base model, with {@code root} and {@code max_model_len}, and one per
 * LoRA adapter whose {@code parent} is the base model; SGLang: a card per served model), or as its
 * configuration names them. A backend whose models were never read is {@link #UNKNOWN}: it may be
 * sent any model (and answers for itself), as before models were routed.
 *
 * <p>Immutable and thread-safe.
 *
 * @param cards the cards by model id, in the engine's order
 * @param source where they come from: {@code "unknown"}, {@code "configured"} or {@code "discovered"}
 */
record ServedModels(Map<String, Card> cards, String source) {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Nothing read yet: any model may be sent. */
  static final ServedModels UNKNOWN = new ServedModels(Map.of(), "unknown");

  /**
   * One model card.
   *
   * @param id the name requests use in {@code model}
   * @param parent the base model of a LoRA adapter, or {@code null} for a base model
   * @param root the model path (an adapter's path), or {@code null}
   * @param maxModelLen the context length in tokens, or {@code -1} when not given (vLLM gives none
   *     for adapters: they have their parent's)
   */
  record Card(String id, String parent, String root, int maxModelLen) {
    /** Whether this card is a LoRA adapter. */
    boolean adapter() {
      return parent != null;
    }
  }

  ServedModels {
    cards = Collections.unmodifiableMap(new LinkedHashMap<>(cards));
  }

  /** Whether the backend's models are known (configured or read). */
  boolean known() {
    return !source.equals("unknown");
  }

  /** The configured names: base models, no context length known. */
  static ServedModels configured(List<String> names) {
    Map<String, Card> cards = new LinkedHashMap<>();
    for (String n : names) {
      cards.put(n, new Card(n, null, null, -1));
    }
    return new ServedModels(cards, "configured");
  }

  /**
   * The cards of an OpenAI-style {@code /v1/models} body ({@code {"data": [{"id", "parent", "root",
   * "max_model_len"}...]}}).
   *
   * @throws IOException if the body is not such a list (no {@code data} array, a card without id)
   */
  static ServedModels parseModelList(byte[] body) throws IOException {
    JsonNode data = JSON.readTree(body).path("data");
    if (!data.isArray()) {
      throw new IOException("no data array");
    }
    Map<String, Card> cards = new LinkedHashMap<>();
    for (JsonNode m : data) {
      JsonNode id = m.get("id");
      if (id == null || !id.isTextual() || id.asText().isEmpty()) {
        throw new IOException("a model card without an id");
      }
      JsonNode parent = m.get("parent");
      JsonNode root = m.get("root");
      JsonNode len = m.get("max_model_len");
      cards.put(id.asText(), new Card(id.asText(),
          parent != null && parent.isTextual() && !parent.asText().isEmpty() ? parent.asText() : null,
          root != null && root.isTextual() ? root.asText() : null,
          len != null && len.canConvertToInt() && len.asInt() > 0 ? len.asInt() : -1));
    }
    return new ServedModels(cards, "discovered");
  }

  /**
   * The model of an SGLang {@code /get_model_info} body ({@code {"model_path": ..., ...}}); SGLang
   * serves requests whose {@code model} is its served name, which defaults to the path.
   *
   * @throws IOException if the body has no {@code model_path}
   */
  static ServedModels parseSglangModelInfo(byte[] body) throws IOException {
    JsonNode info = JSON.readTree(body);
    JsonNode path = info.get("served_model_name");
    if (path == null || !path.isTextual()) {
      path = info.get("model_path");
    }
    if (path == null || !path.isTextual() || path.asText().isEmpty()) {
      throw new IOException("no model_path");
    }
    return new ServedModels(Map.of(path.asText(), new Card(path.asText(), null, path.asText(), -1)), "discovered");
  }

  /** The card named {@code model}, or {@code null}. */
  Card card(String model) {
    return cards.get(model);
  }

  /**
   * The context length requests for {@code model} get here: its card's, an adapter's parent's, or
   * {@code -1} when unknown.
   */
  int maxModelLen(String model) {
    Card c = cards.get(model);
    if (c == null) {
      return -1;
    }
    if (c.maxModelLen() > 0 || c.parent() == null) {
      return c.maxModelLen();
    }
    Card parent = cards.get(c.parent());
    return parent == null ? -1 : parent.maxModelLen();
  }

  /** The base models (cards that are not adapters). */
  List<String> baseModels() {
    return cards.values().stream().filter(c -> !c.adapter()).map(Card::id).toList();
  }

  /** The adapters. */
  List<String> adapters() {
    return cards.values().stream().filter(Card::adapter).map(Card::id).toList();
  }
}
