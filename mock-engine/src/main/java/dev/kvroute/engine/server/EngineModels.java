package dev.kvroute.engine.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvroute.core.request.LaxBoolean;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What one mock engine serves, as vLLM's {@code OpenAIServingModels} keeps it
 * ({@code vllm/entrypoints/openai/models/serving.py}): the base model's served names and the LoRA
 * adapters loaded now (at start from {@code --lora-modules}, at run time through
 * {@code /v1/load_lora_adapter}). It answers {@code GET /v1/models} (a card per served name with
 * {@code root} and {@code max_model_len}, then a card per adapter with {@code root} = its path and
 * {@code parent} = the base model's first name, without {@code max_model_len}, as vLLM's), the
 * load/unload endpoints with vLLM's bodies, and which adapter a request's {@code model} names.
 *
 * <p>Not thread-safe: used on the engine's event loop only.
 */
final class EngineModels {
  /** A loaded adapter: its path and when it was loaded (unix seconds). */
  private record Adapter(String path, long created) {}

  /** An answer of a load or unload request: HTTP status, content type and body. */
  record Answer(int status, String contentType, String body) {}

  private final List<String> served;
  private final int maxModelLen;
  private final Map<String, Adapter> adapters = new LinkedHashMap<>();
  private final long created = System.currentTimeMillis() / 1000;

  EngineModels(MockEngineOptions options) {
    this.served = options.servedModelNames();
    this.maxModelLen = options.engine().maxModelLen();
    options.models().loraModules().forEach((name, path) -> adapters.put(name, new Adapter(path, created)));
  }

  /** Whether {@code name} is one of the base model's served names. */
  boolean isBase(String name) {
    return served.contains(name);
  }

  /** Whether {@code name} is a loaded adapter. */
  boolean isAdapter(String name) {
    return adapters.containsKey(name);
  }

  /** The name vLLM reports in responses for a request: the adapter's, else the first served name. */
  String responseModel(String adapter) {
    return adapter != null ? adapter : served.get(0);
  }

  /** The loaded adapters' names, in load order. */
  List<String> adapterNames() {
    return List.copyOf(adapters.keySet());
  }

  /** The {@code GET /v1/models} body. */
  String modelsJson() {
    StringBuilder sb = new StringBuilder("{\"object\":\"list\",\"data\":[");
    boolean first = true;
    for (String name : served) {
      if (!first) {
        sb.append(',');
      }
      first = false;
      sb.append("{\"id\":").append(Json.quote(name)).append(",\"object\":\"model\",\"created\":").append(created)
          .append(",\"owned_by\":\"vllm\",\"root\":").append(Json.quote(served.get(0)))
          .append(",\"parent\":null,\"max_model_len\":").append(maxModelLen).append(",\"permission\":[]}");
    }
    for (Map.Entry<String, Adapter> e : adapters.entrySet()) {
      sb.append(",{\"id\":").append(Json.quote(e.getKey())).append(",\"object\":\"model\",\"created\":")
          .append(e.getValue().created()).append(",\"owned_by\":\"vllm\",\"root\":")
          .append(Json.quote(e.getValue().path())).append(",\"parent\":").append(Json.quote(served.get(0)))
          .append(",\"max_model_len\":null,\"permission\":[]}");
    }
    return sb.append("]}").toString();
  }

  /** {@code POST /v1/load_lora_adapter} with body {@code {lora_name, lora_path[, load_inplace]}}. */
  Answer load(JsonNode body) {
    String name = text(body, "lora_name");
    String path = text(body, "lora_path");
    if (name == null || path == null) {
      return error(400, "InvalidUserInput", "Both 'lora_name' and 'lora_path' must be provided.");
    }
    JsonNode inplaceNode = body.get("load_inplace"); // load_inplace: bool = False, read as pydantic's lax bool
    LaxBoolean.Result inplaceLax = inplaceNode == null ? null : LaxBoolean.of(inplaceNode);
    if (inplaceLax != null && !inplaceLax.ok()) {
      return error(400, Responses.BAD_REQUEST,
          LaxBoolean.validationError("load_inplace", inplaceNode, inplaceLax.failure()));
    }
    boolean inplace = inplaceLax != null && inplaceLax.value();
    if (!inplace && adapters.containsKey(name)) {
      return error(400, "InvalidUserInput", "The lora adapter '" + name + "' has already been loaded. If you"
          + " want to load the adapter in place, set 'load_inplace' to True.");
    }
    if (isBase(name)) {
      return error(400, "InvalidUserInput", "The lora adapter '" + name + "' has the name of a base model.");
    }
    adapters.put(name, new Adapter(path, System.currentTimeMillis() / 1000));
    return new Answer(200, "text/plain; charset=utf-8", "Success: LoRA adapter '" + name + "' added successfully.");
  }

  /** {@code POST /v1/unload_lora_adapter} with body {@code {lora_name}}; the name unloaded, or null. */
  Answer unload(JsonNode body) {
    String name = text(body, "lora_name");
    if (name == null) {
      return error(400, "InvalidUserInput", "'lora_name' needs to be provided to unload a LoRA adapter.");
    }
    if (adapters.remove(name) == null) {
      return error(404, Responses.NOT_FOUND_ERROR, "The lora adapter '" + name + "' cannot be found.");
    }
    return new Answer(200, "text/plain; charset=utf-8", "Success: LoRA adapter '" + name + "' removed successfully.");
  }

  private static String text(JsonNode body, String field) {
    JsonNode n = body == null ? null : body.get(field);
    return n != null && n.isTextual() && !n.asText().isEmpty() ? n.asText() : null;
  }

  private static Answer error(int status, String type, String message) {
    return new Answer(status, "application/json", Responses.error(status, type, message, null));
  }
}
