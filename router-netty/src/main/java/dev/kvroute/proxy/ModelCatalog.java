package dev.kvroute.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvroute.core.BackendId;
import dev.kvroute.core.index.PrefixIndex;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.proxy.config.ModelsConfig;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The fleet's models as the router routes them: which backends serve a request's model (a base model
 * or a LoRA adapter), the index namespace of its pages, the context length it gets, the union the
 * router's {@code GET /v1/models} lists, and the model label metrics may carry.
 *
 * <p>A request's {@code model} is first mapped through {@code models.aliases} (the body is then
 * rewritten to the served name, its other bytes unchanged). Its candidates are the backends whose
 * served models list it, plus the backends whose models are not known yet (they may be sent any model,
 * as before discovery). A model no backend lists, when every backend's models are known, is unknown:
 * the router answers vLLM's 404 itself. A request without {@code model} goes to every backend, in the
 * namespace of the fleet's one base model when there is one.
 *
 * <p>Stateless apart from its configuration, and thread-safe: it reads each backend's volatile view.
 */
final class ModelCatalog {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonFactory FACTORY = new JsonFactory();
  /** The metric label of a model no configuration or discovery names. */
  static final String OTHER_LABEL = "other";

  /** How many requested names {@link #resolve} remembers its answer for (a client may send any name). */
  static final int MEMO_LIMIT = 64;
  /**
   * The longest requested name {@link #resolve} remembers (characters): model names are short, and a
   * client may send names of millions of characters, which the memo must not keep.
   */
  static final int MEMO_NAME_CHARS = 256;

  private final ModelsConfig config;
  /** The models {@code routing.tokenizers} names: their own tokenizer comes before their base model's. */
  private final Set<String> ownTokenizers;
  /**
   * The last resolution of each requested name ({@code ""} for none) that rewrote no body, with the
   * backend list and each backend's models it was made from: valid while both are the same objects
   * (the registry and discovery replace them, never change them). Cleared at {@link #MEMO_LIMIT};
   * names over {@link #MEMO_NAME_CHARS} are not kept.
   */
  private final ConcurrentHashMap<String, Memo> memos = new ConcurrentHashMap<>();

  private record Memo(List<Backend> all, ServedModels[] models, Resolved resolved) {
    boolean validFor(List<Backend> now) {
      if (now != all) {
        return false;
      }
      for (int i = 0; i < models.length; i++) {
        if (now.get(i).models() != models[i]) {
          return false;
        }
      }
      return true;
    }
  }

  ModelCatalog(ModelsConfig config) {
    this(config, Set.of());
  }

  /**
   * @param ownTokenizers the model names {@code routing.tokenizers} gives a tokenizer of their own
   *     (see {@link Resolved#tokenizerModel})
   */
  ModelCatalog(ModelsConfig config, Set<String> ownTokenizers) {
    this.config = config;
    this.ownTokenizers = Set.copyOf(ownTokenizers);
  }

  /**
   * Where one request's model may go.
   *
   * @param requested the body's {@code model}, or {@code null}
   * @param served the served name it stands for (after aliases), or {@code null} without a model
   * @param base the base model (an adapter's parent), or {@code null}
   * @param adapter the LoRA adapter, or {@code null}
   * @param serving the backends that serve it (with those whose models are unknown)
   * @param unknown whether no backend serves it (and every backend's models are known)
   * @param listed whether a backend whose models are known lists it (configured or discovered)
   * @param maxModelLen the largest context length among {@code serving}, or {@code -1} when any of
   *     them has none known
   * @param rewrittenBody the body with {@code model} replaced by {@code served} (an alias applied), or
   *     {@code null} to forward the original bytes
   * @param tokenizerModel the model whose tokenizer the router tokenizes the prompt with, the key of
   *     {@code routing.tokenizers}: the requested or served name when that names a tokenizer of its
   *     own, else the base model (an adapter is tokenized as its base model, as vLLM does for an
   *     adapter without a tokenizer of its own; an alias as its served model), else the served name
   */
  record Resolved(String requested, String served, String base, String adapter, Set<BackendId> serving,
      boolean unknown, boolean listed, int maxModelLen, byte[] rewrittenBody, String tokenizerModel) {

    /** {@code view} as the router core tokenizes it: with {@link #tokenizerModel} as its model. */
    RequestView tokenized(RequestView view) {
      return Objects.equals(tokenizerModel, view.model()) ? view : new RequestView(view.endpoint(), tokenizerModel,
          view.sessionKey(), view.segments(), view.stream(), view.maxTokens(), view.body());
    }

    /** Whether {@code b} may be sent this request. */
    boolean serves(Backend b) {
      return serving.contains(b.id());
    }

    /** The prefix-index namespace of the request's pages. */
    long namespace() {
      return PrefixIndex.namespace(adapter);
    }

    /** The model as a bounded metric label: a served (configured or discovered) name, else "other". */
    String label() {
      return served == null ? "none" : listed ? served : OTHER_LABEL;
    }
  }

  /** Resolves {@code view}'s model among {@code all} backends; {@code body} is the request body. */
  Resolved resolve(RequestView view, java.util.function.Supplier<byte[]> body, List<Backend> all) {
    String name = view.model() == null ? "" : view.model();
    Memo memo = memos.get(name);
    if (memo != null && memo.validFor(all)) {
      return memo.resolved();
    }
    ServedModels[] models = new ServedModels[all.size()];
    for (int i = 0; i < models.length; i++) {
      models[i] = all.get(i).models();
    }
    Resolved r = resolveAfresh(view, body, all);
    if (r.rewrittenBody() == null && name.length() <= MEMO_NAME_CHARS) {
      if (memos.size() >= MEMO_LIMIT) {
        memos.clear();
      }
      memos.put(name, new Memo(all, models, r));
    }
    return r;
  }

  private Resolved resolveAfresh(RequestView view, java.util.function.Supplier<byte[]> body, List<Backend> all) {
    String requested = view.model() == null || view.model().isEmpty() ? null : view.model();
    String served = requested == null ? null : config.aliases().getOrDefault(requested, requested);
    Set<BackendId> serving = new HashSet<>();
    boolean allKnown = true;
    boolean listed = false;
    String base = null;
    String adapter = null;
    int maxLen = 0;
    Set<String> bases = new HashSet<>();
    for (Backend b : all) {
      ServedModels m = b.models();
      if (!m.known()) {
        allKnown = false;
        serving.add(b.id());
        maxLen = -1;
        continue;
      }
      if (served == null) {
        serving.add(b.id());
        bases.addAll(m.baseModels());
        maxLen = -1; // each engine picks its own default model
        continue;
      }
      ServedModels.Card card = m.card(served);
      if (card == null) {
        continue;
      }
      serving.add(b.id());
      listed = true;
      if (card.adapter()) {
        base = card.parent();
        adapter = served;
      } else if (adapter == null) {
        base = served;
      }
      int len = m.maxModelLen(served);
      maxLen = len < 0 || maxLen < 0 ? -1 : Math.max(maxLen, len);
    }
    if (served == null && bases.size() == 1) {
      base = bases.iterator().next();
    }
    if (served != null && base == null && adapter == null) {
      base = served; // only backends of unknown models: name the namespace after the request
    }
    boolean unknown = served != null && allKnown && serving.isEmpty();
    byte[] rewritten = requested != null && !served.equals(requested) ? rewriteModel(body.get(), served) : null;
    String tokenizerModel = ownTokenizers.isEmpty() ? view.model() // one tokenizer: the view as it is
        : requested != null && ownTokenizers.contains(requested) ? requested
        : served != null && ownTokenizers.contains(served) ? served
        : base != null ? base : served;
    return new Resolved(requested, served, base, adapter, Set.copyOf(serving), unknown, listed,
        serving.isEmpty() ? -1 : maxLen, rewritten, tokenizerModel);
  }

  /**
   * The body with its top-level {@code model} string replaced by {@code model}, every other byte
   * unchanged; {@code body} itself when it has no such string.
   */
  static byte[] rewriteModel(byte[] body, String model) {
    // every top-level "model" string: the parser routes on the last of duplicate keys, the engine's
    // JSON reader (Python's) keeps the last too, so rewriting only the first would let it see the alias
    List<int[]> spans = new ArrayList<>();
    try (JsonParser p = FACTORY.createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return body;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken value = p.nextToken();
        if (name.equals("model") && value == JsonToken.VALUE_STRING) {
          int start = (int) p.currentTokenLocation().getByteOffset();
          p.getText(); // the value is read in full: its end is the parser's position
          spans.add(new int[] {start, (int) p.currentLocation().getByteOffset()});
        }
        p.skipChildren();
      }
    } catch (IOException e) {
      return body; // the request parser accepted it; nothing to rewrite
    }
    if (spans.isEmpty()) {
      return body;
    }
    byte[] quoted;
    try {
      quoted = JSON.writeValueAsBytes(model);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e); // a String always writes
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(body.length + spans.size() * quoted.length);
    int at = 0;
    for (int[] span : spans) {
      out.write(body, at, span[0] - at);
      out.write(quoted, 0, quoted.length);
      at = span[1];
    }
    out.write(body, at, body.length - at);
    return out.toByteArray();
  }

  /**
   * vLLM's 400 for a prompt that cannot fit, decided before tokenizing: the prompt's length in
   * characters (Unicode code points; token-id segments count their ids) bounds its tokens from below,
   * {@code ceil(chars / maxCharsPerToken)}, and every serving backend's {@code max_model_len} minus the
   * requested output tokens bounds them from above. Returns the error message (vLLM's renderer
   * wording), or {@code null} when the prompt may fit or the context length is unknown.
   *
   * <p>The requested output is {@code max_tokens} (or {@code max_completion_tokens}); without it 16
   * for completions (vLLM's default) and 0 for chat (the engine takes what is left).
   */
  String tooLong(RequestView view, Resolved r) {
    int maxLen = r.maxModelLen();
    if (maxLen <= 0) {
      return null;
    }
    long output = view.maxTokens() >= 0 ? view.maxTokens()
        : view.endpoint() == dev.kvroute.core.request.Endpoint.COMPLETIONS ? 16 : 0;
    long maxInput = Math.max(0, maxLen - output);
    long tokenIds = 0;
    long chars = 0;
    for (PromptSegment s : view.segments()) {
      if (s.isTokens()) {
        tokenIds += s.tokenIds().length;
      } else {
        chars += s.codePointCount(); // counted in the body's bytes: the text is not decoded
      }
    }
    int perToken = config.maxCharsPerToken();
    long lowerBound = tokenIds + (chars + perToken - 1) / perToken;
    if (lowerBound <= maxInput) {
      return null;
    }
    String head = "This model's maximum context length is " + maxLen + " tokens. However, you requested "
        + output + " output tokens and your prompt contains ";
    String tail = ". Please reduce the length of the input prompt or the number of requested output tokens.";
    if (chars == 0) {
      return head + tokenIds + " input tokens, for a total of " + (tokenIds + output) + " tokens" + tail;
    }
    if (maxInput <= tokenIds) {
      // the output alone (with any token ids) leaves the text no room: vLLM's wording with a lower bound
      return head + "at least " + lowerBound + " input tokens, for a total of at least " + (lowerBound + output)
          + " tokens" + tail;
    }
    long charBound = Math.max(0, maxInput - tokenIds) * perToken;
    return head + chars + " characters (more than " + charBound + " characters, which is the upper bound for "
        + Math.max(0, maxInput - tokenIds) + " input tokens)" + tail;
  }

  /**
   * The router's {@code GET /v1/models} body: the union of the cards of {@code backends} whose models
   * are known, in backend order, each with the extension field {@code kvroute_backends} naming the
   * backends that serve it; {@code null} when no backend's models are known.
   */
  String union(List<Backend> backends) {
    long createdSeconds = System.currentTimeMillis() / 1000;
    Map<String, ObjectNode> cards = new LinkedHashMap<>();
    Map<String, ArrayNode> servedBy = new LinkedHashMap<>();
    boolean any = false;
    for (Backend b : backends) {
      ServedModels m = b.models();
      if (!m.known()) {
        continue;
      }
      any = true;
      for (ServedModels.Card c : m.cards().values()) {
        ObjectNode card = cards.computeIfAbsent(c.id(), id -> {
          ObjectNode n = JSON.createObjectNode();
          n.put("id", id);
          n.put("object", "model");
          n.put("created", createdSeconds); // vLLM's card too gives the time of the listing
          n.put("owned_by", "kvroute");
          n.put("root", c.root());
          n.put("parent", c.parent());
          if (c.maxModelLen() > 0) {
            n.put("max_model_len", c.maxModelLen());
          } else {
            n.putNull("max_model_len");
          }
          n.putArray("permission");
          return n;
        });
        if (c.maxModelLen() > card.path("max_model_len").asInt(0)) {
          card.put("max_model_len", c.maxModelLen());
        }
        servedBy.computeIfAbsent(c.id(), id -> card.putArray("kvroute_backends")).add(b.id().name());
      }
    }
    if (!any) {
      return null;
    }
    ObjectNode list = JSON.createObjectNode();
    list.put("object", "list");
    ArrayNode data = list.putArray("data");
    cards.values().forEach(data::add);
    return list.toString();
  }

  /** Every model name configured or discovered now (the values a model label may take, with "other"). */
  static Set<String> knownNames(List<Backend> backends, ModelsConfig config) {
    Set<String> names = new HashSet<>(config.aliases().values());
    for (Backend b : backends) {
      names.addAll(b.models().cards().keySet());
    }
    return names;
  }

  /** Backend names of {@code r.serving}, sorted (for messages). */
  static List<String> names(Set<BackendId> ids) {
    List<String> out = new ArrayList<>();
    ids.forEach(id -> out.add(id.name()));
    out.sort(null);
    return out;
  }

  static String utf8(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }
}
