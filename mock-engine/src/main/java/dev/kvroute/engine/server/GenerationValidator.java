package dev.kvroute.engine.server;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.JsonContentType;
import dev.kvroute.core.request.LaxBoolean;
import dev.kvroute.core.request.LaxInteger;
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.core.request.SamplingLimits;
import dev.kvroute.core.tokenize.ChatTemplateException;
import dev.kvroute.core.tokenize.PromptTokenizer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * vLLM's validation of a generation request ({@code /v1/chat/completions}, {@code /v1/completions}),
 * without the network: the body is read, checked in vLLM's order and either turned into the {@link
 * GenerationRequest} to run or rejected with the status and OpenAI-style error body vLLM answers
 * ({@link Rejection}).
 *
 * <p>The order of the checks, each answered on the first failure: the {@code Content-Type} is JSON
 * or absent ({@link JsonContentType}; else "Input should be a valid dictionary ..."); the body is a
 * JSON object ("JSON decode error", "Input should be a valid dictionary"); {@code priority} is an
 * integer as pydantic reads one ({@link LaxInteger}: {@code "x"}, {@code 1.5}, {@code 1e99},
 * {@code null} are 400 with FastAPI's validation text; {@code true} is 1; any integer is then
 * accepted and ignored, as vLLM's V1 engine does under its default FCFS scheduling policy, where
 * V0 answered "Got priority N but Priority scheduling is not enabled."); the model is the served one or a loaded
 * adapter (404, "The model `M` does not exist."); the sampling fields are typed as vLLM's request
 * models type them ({@code stream}, 1 <= {@code n} <= {@code VLLM_MAX_N_SEQUENCES} ({@link SamplingLimits}), {@code min_tokens}, {@code ignore_eos}, the float
 * knobs, {@code top_k}, {@code max_tokens} or chat's {@code max_completion_tokens}); {@code
 * stream_options} only with {@code stream}; the prompt parses and tokenizes (the router's parser and
 * the engine's prompt tokenizer); it is not empty and its ids are in the vocabulary; prompt plus
 * output fit {@code max_model_len}; the drawn replies fit {@code max_num_seqs × max_model_len}
 * tokens (the mock's own bound); {@code min_tokens <= max_tokens}.
 *
 * <p>Thread-safe when its parser, tokenizer and models are (they are the engine's, shared by every
 * connection).
 */
final class GenerationValidator {
  static final ObjectMapper MAPPER = new ObjectMapper();
  /** Unused ids tolerated between vocabulary ids (o200k_base has 19 before {@code <|endofprompt|>}). */
  private static final int VOCABULARY_GAP = 64;
  /** Optional float fields of vLLM's request models that the mock engine only type-checks. */
  private static final List<String> NUMBER_FIELDS = List.of(
      "temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty");

  /**
   * A request that passed every check.
   *
   * @param lora the adapter named by {@code model}, or null for the base model
   * @param servedModel the model name the responses carry
   * @param stream whether to answer with server-sent events
   * @param includeUsage {@code stream_options.include_usage}
   * @param continuousUsage {@code stream_options.continuous_usage_stats}
   * @param n completions per prompt
   * @param maxTokens output tokens per completion (requested, or what the context leaves)
   * @param minTokens {@code min_tokens}
   * @param ignoreEos {@code ignore_eos}
   * @param seed {@code seed}, 0 when absent
   * @param prompts the prompts' token ids: one for chat, every prompt of a completions batch
   * @param bodyRequestId the body's textual {@code request_id}, or null
   */
  record GenerationRequest(
      String lora,
      String servedModel,
      boolean stream,
      boolean includeUsage,
      boolean continuousUsage,
      int n,
      int maxTokens,
      int minTokens,
      boolean ignoreEos,
      long seed,
      List<int[]> prompts,
      String bodyRequestId) {}

  /** A request vLLM would refuse: the status and the JSON error body to answer. */
  static final class Rejection extends Exception {
    private final int status;
    private final String json;
    private final boolean unknownModel;

    private Rejection(int status, String json, boolean unknownModel) {
      super(json, null, false, false);
      this.status = status;
      this.json = json;
      this.unknownModel = unknownModel;
    }

    /** vLLM's {@code BadRequest} ("Bad Request", pydantic and decoding errors). */
    static Rejection badRequest(String message, String param) {
      return new Rejection(400, Responses.error(400, Responses.BAD_REQUEST, message, param), false);
    }

    /** vLLM's {@code BadRequestError} (a {@code ValueError} from the engine's checks). */
    static Rejection badRequestError(String message, String param) {
      return new Rejection(400, Responses.error(400, Responses.BAD_REQUEST_ERROR, message, param), false);
    }

    int status() {
      return status;
    }

    /** The OpenAI-style error body. */
    String json() {
      return json;
    }

    /** Whether the request named a model this engine does not serve (counted by the engine's metrics). */
    boolean unknownModel() {
      return unknownModel;
    }
  }

  /** What {@link #readObject} parses. */
  @FunctionalInterface
  interface JsonRead {
    JsonNode read() throws IOException;
  }

  private final RequestParser parser;
  private final PromptTokenizer promptTokenizer;
  private final EngineModels models;
  private final int maxModelLen;
  private final int maxNumSeqs;

  GenerationValidator(RequestParser parser, PromptTokenizer promptTokenizer, EngineModels models,
      int maxModelLen, int maxNumSeqs) {
    this.parser = Objects.requireNonNull(parser, "parser");
    this.promptTokenizer = Objects.requireNonNull(promptTokenizer, "promptTokenizer");
    this.models = Objects.requireNonNull(models, "models");
    this.maxModelLen = maxModelLen;
    this.maxNumSeqs = maxNumSeqs;
  }

  /**
   * Validates a generation request (see the class doc).
   *
   * @param headers the request's headers by name (the parser reads the session header)
   * @throws Rejection with vLLM's status and error body, at the first failed check
   */
  GenerationRequest validate(Endpoint endpoint, byte[] body, Function<String, String> headers) throws Rejection {
    if (!JsonContentType.readsAsJson(headers.apply("content-type"))) {
      // FastAPI leaves a body of another type as bytes, which the request model refuses
      throw Rejection.badRequest("Input should be a valid dictionary or object to extract fields from", null);
    }
    JsonNode root = readGenerationJson(body);
    JsonNode priority = root.get("priority");
    if (priority != null) {
      // pydantic validates the body before the handler runs: before the model is looked up
      LaxInteger.Result p = LaxInteger.of(priority);
      if (!p.ok()) {
        throw Rejection.badRequest(LaxInteger.validationError("priority", priority, p.failure()), null);
      }
    }
    checkBooleans(endpoint, root);
    JsonNode model = root.get("model");
    String modelName = model == null || model.isNull() ? null : model.asText();
    String lora = null;
    if (modelName != null && !modelName.isEmpty() && !models.isBase(modelName)) {
      if (!models.isAdapter(modelName)) {
        throw new Rejection(404, Responses.error(404, Responses.NOT_FOUND_ERROR,
            "The model `" + modelName + "` does not exist.", "model"), true);
      }
      lora = modelName;
    }
    String served = models.responseModel(lora);
    boolean stream;
    int n;
    int minTokens;
    boolean ignoreEos;
    long seed;
    Integer maxTokensField;
    try {
      stream = bool(root, "stream", false);  // checked by checkBooleans
      n = integer(root, "n", 1, Integer.MIN_VALUE);
      if (n < 1) {
        // SamplingParams._verify_args (a ValueError, answered 400 BadRequestError)
        throw Rejection.badRequestError(SamplingLimits.nTooSmall(n), "n");
      }
      if (n > SamplingLimits.MAX_N_SEQUENCES) {
        // SamplingParams._verify_args: VLLM_MAX_N_SEQUENCES bounds the fan-out of one request
        throw Rejection.badRequestError(SamplingLimits.nTooLarge(n), "n");
      }
      minTokens = integer(root, "min_tokens", 0, 0);
      ignoreEos = bool(root, "ignore_eos", false);
      // sampling knobs the mock ignores, typed as vLLM's request models type them
      for (String field : NUMBER_FIELDS) {
        number(root, field);
      }
      integer(root, "top_k", 0, Integer.MIN_VALUE);
      // seed: Optional[int] within the 64-bit range, logprobs (completions) / top_logprobs (chat): Optional[int];
      // asLong() read "abc" as 0 and 1.5 as 1
      seed = optionalLong(root, "seed");
      optionalLong(root, endpoint == Endpoint.COMPLETIONS ? "logprobs" : "top_logprobs");
      maxTokensField = null;
      if (endpoint == Endpoint.CHAT_COMPLETIONS && present(root, "max_completion_tokens")) {
        maxTokensField = integer(root, "max_completion_tokens", 0, 0);
      } else if (present(root, "max_tokens")) {
        maxTokensField = integer(root, "max_tokens", 0, 0);
      }
    } catch (IllegalArgumentException e) {
      throw Rejection.badRequest(e.getMessage(), null);
    }
    JsonNode streamOptions = root.get("stream_options");
    boolean hasStreamOptions = streamOptions != null && !streamOptions.isNull();
    if (hasStreamOptions && !stream) {
      throw Rejection.badRequest("Stream options can only be defined when `stream=True`.", "stream_options");
    }
    // Optional[bool] = True / False: absent is the default, null is None (falsy)
    boolean includeUsage = hasStreamOptions && bool(streamOptions, "include_usage", true);
    boolean continuousUsage = hasStreamOptions && bool(streamOptions, "continuous_usage_stats", false);

    List<int[]> prompts;
    try {
      prompts = prompts(body, endpoint, root, headers);
    } catch (InvalidRequestException e) {
      throw Rejection.badRequest(e.getMessage(), e.param());
    }
    String invalidPrompt = invalidPrompt(prompts);
    if (invalidPrompt != null) {
      throw Rejection.badRequestError(invalidPrompt, null);
    }
    int maxLen = maxModelLen;
    int maxTokens = Integer.MAX_VALUE;
    for (int[] p : prompts) {
      int requested;
      if (maxTokensField != null) {
        requested = maxTokensField;
      } else if (endpoint == Endpoint.COMPLETIONS) {
        requested = 16;
      } else {
        if (p.length >= maxLen) {
          throw Rejection.badRequestError(
              "This model's maximum context length is " + maxLen + " tokens. However, your request has "
                  + p.length + " input tokens. Please reduce the length of the input messages.",
              "input_tokens");
        }
        requested = maxLen - p.length;
      }
      if (requested < 1) {
        throw Rejection.badRequestError("max_tokens must be at least 1, got " + requested + ".", "max_tokens");
      }
      if ((long) p.length + requested > maxLen) {
        throw Rejection.badRequestError(
            "This model's maximum context length is " + maxLen + " tokens. However, you requested "
                + requested + " output tokens and your prompt contains " + p.length
                + " input tokens, for a total of " + (p.length + (long) requested)
                + " tokens. Please reduce the length of the input prompt or the number of requested"
                + " output tokens.",
            "input_tokens");
      }
      maxTokens = requested; // the same for every prompt of a batch (chat has one prompt)
    }
    long outputTokens = (long) n * prompts.size() * maxTokens;
    long outputLimit = (long) maxNumSeqs * maxLen;
    if (outputTokens > outputLimit) {
      // replies are drawn in full when the request starts: bound their memory (vLLM has no such limit)
      throw Rejection.badRequestError(
          "n x prompts x max_tokens = " + outputTokens + " output tokens is more than the mock engine takes in one"
              + " request (max_num_seqs x max_model_len = " + outputLimit + "). Please reduce n or max_tokens.",
          "n");
    }
    if (minTokens > maxTokens) {
      throw Rejection.badRequestError(
          "min_tokens must be less than or equal to max_tokens=" + maxTokens + ", got " + minTokens + ".",
          "min_tokens");
    }
    JsonNode rid = root.get("request_id");
    String bodyRequestId = rid != null && rid.isTextual() ? rid.asText() : null;
    return new GenerationRequest(lora, served, stream, includeUsage, continuousUsage, n, maxTokens, minTokens,
        ignoreEos, seed, prompts, bodyRequestId);
  }

  /** The prompts of the request: one for chat; for completions, every prompt of a batch. */
  private List<int[]> prompts(byte[] body, Endpoint endpoint, JsonNode root, Function<String, String> headers)
      throws InvalidRequestException {
    RequestView view = parser.parse(endpoint, body, headers);
    List<int[]> prompts = new ArrayList<>();
    try {
      prompts.add(promptTokenizer.tokenize(view));
    } catch (ChatTemplateException e) { // vLLM: 400 for a template error
      throw new InvalidRequestException(e.getMessage(), null);
    }
    if (endpoint == Endpoint.COMPLETIONS) {
      JsonNode p = root.get("prompt");
      boolean batch = p != null && p.isArray() && p.size() > 1 && (p.get(0).isTextual() || p.get(0).isArray());
      if (batch) {
        for (int i = 1; i < p.size(); i++) {
          JsonNode item = p.get(i);
          if (item.isTextual()) {
            prompts.add(promptTokenizer.tokenize(
                Endpoint.COMPLETIONS, List.of(PromptSegment.text(null, item.asText()))));
          } else if (item.isArray() && item.size() > 0) {
            int[] ids = new int[item.size()];
            for (int j = 0; j < ids.length; j++) {
              if (!item.get(j).canConvertToInt()) {
                throw new InvalidRequestException("prompt." + i + "." + j + ": expected a token id", "prompt");
              }
              ids[j] = item.get(j).asInt();
            }
            prompts.add(ids);
          } else {
            throw new InvalidRequestException(
                "prompt." + i + ": expected a string or a non-empty list of token ids", "prompt");
          }
        }
      }
    }
    return prompts;
  }

  /**
   * vLLM's input checks ({@code InputProcessor._validate_model_input} in {@code
   * vllm/v1/engine/input_processor.py}, raised as {@code VLLMValidationError}, answered 400): an empty
   * prompt ("The decoder prompt cannot be empty") and a token id beyond the vocabulary ("Token id N
   * is out of vocabulary", checked on the largest id; vLLM compares it with the tokenizer's largest
   * id, so an unused id inside the range, such as o200k_base's 199998, passes). Returns the message,
   * or {@code null}.
   */
  private String invalidPrompt(List<int[]> prompts) {
    int maxId = -1;
    for (int[] p : prompts) {
      if (p.length == 0) {
        return "The decoder prompt cannot be empty";
      }
      for (int id : p) {
        maxId = Math.max(maxId, id);
      }
    }
    return withinVocabulary(maxId) ? null : "Token id " + maxId + " is out of vocabulary";
  }

  /** Whether {@code id} or one of the next {@value #VOCABULARY_GAP} ids decodes (gaps are inside the range). */
  private boolean withinVocabulary(int id) {
    long end = Math.min((long) id + VOCABULARY_GAP, Integer.MAX_VALUE);
    for (long t = id; t <= end; t++) {
      try {
        promptTokenizer.tokenizer().decode(new int[] {(int) t});
        return true;
      } catch (IllegalArgumentException unknown) {
        // an unused id: look a little further
      }
    }
    return false;
  }

  /**
   * Reads a generation request's {@code body} as a JSON object without a tree of the prompt, which
   * {@link #prompts} reads with the router's parser: {@code messages} is only checked as JSON, and
   * so is a {@code prompt} list of token ids after its first id (a trace's prompt is tens of
   * thousands of ids, and a node per id was most of the engine's allocation in replays). A prompt
   * batch (a list of strings or of id lists) is kept whole, for {@link #prompts}.
   */
  private static JsonNode readGenerationJson(byte[] body) throws Rejection {
    return readObject(() -> {
      try (JsonParser p = MAPPER.createParser(body)) {
        if (p.nextToken() != JsonToken.START_OBJECT) {
          return p.currentToken() == null ? null : p.readValueAsTree();
        }
        ObjectNode root = MAPPER.createObjectNode();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String field = p.currentName();
          JsonToken t = p.nextToken();
          if (field.equals("messages")) {
            p.skipChildren();
            root.putArray(field);
          } else if (field.equals("prompt") && t == JsonToken.START_ARRAY) {
            ArrayNode prompt = root.putArray(field);
            boolean ids = false;
            while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
              if (prompt.isEmpty() || !ids) {
                ids = prompt.isEmpty() && t == JsonToken.VALUE_NUMBER_INT;
                prompt.add((JsonNode) p.readValueAsTree());
              } else {
                p.skipChildren();
              }
            }
          } else {
            root.set(field, (JsonNode) p.readValueAsTree());
          }
        }
        return root;
      }
    });
  }

  /**
   * Runs {@code read} and returns the JSON object it gives.
   *
   * @throws Rejection 400 in vLLM's wording when it is not JSON or not an object
   */
  static JsonNode readObject(JsonRead read) throws Rejection {
    JsonNode root;
    try {
      root = read.read();
    } catch (JsonProcessingException e) {
      throw Rejection.badRequest("JSON decode error: " + e.getOriginalMessage(), null);
    } catch (IOException e) {
      throw Rejection.badRequest("JSON decode error: " + e, null);
    }
    if (root == null || !root.isObject()) {
      throw Rejection.badRequest("Input should be a valid dictionary or object to extract fields from", null);
    }
    return root;
  }

  private static boolean present(JsonNode root, String field) {
    JsonNode v = root.get(field);
    return v != null && !v.isNull();
  }

  /**
   * The {@code bool} fields of vLLM's request models ({@code ChatCompletionRequest}, {@code
   * CompletionRequest} and {@code StreamOptions} in {@code vllm/entrypoints/openai/protocol.py}) that
   * refuse {@code null} ({@code bool = ...}); the others are {@code Optional[bool]}.
   */
  private static final List<String> BOOLEANS = List.of("use_beam_search", "include_stop_str_in_output",
      "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens", "add_special_tokens");
  private static final List<String> CHAT_BOOLEANS = List.of("echo", "add_generation_prompt",
      "continue_final_message");
  private static final List<String> OPTIONAL_BOOLEANS = List.of("stream", "return_tokens_as_token_ids",
      "return_token_ids");
  private static final List<String> CHAT_OPTIONAL_BOOLEANS = List.of("logprobs", "parallel_tool_calls");
  private static final List<String> COMPLETION_OPTIONAL_BOOLEANS = List.of("echo");
  private static final List<String> STREAM_OPTIONS_BOOLEANS = List.of("include_usage", "continuous_usage_stats");

  /**
   * Checks every {@code bool} field of the endpoint's request model as pydantic's lax mode does
   * ({@link LaxBoolean}: {@code "yes"}, {@code 1}, {@code "off"} are booleans; {@code "x"}, {@code 2},
   * {@code 0.5} are not; {@code null} only where the field is optional), before the model is looked
   * up, as FastAPI validates the body first.
   *
   * @throws Rejection 400 with FastAPI's validation text at the first refused field
   */
  private static void checkBooleans(Endpoint endpoint, JsonNode root) throws Rejection {
    boolean chat = endpoint == Endpoint.CHAT_COMPLETIONS;
    for (String f : BOOLEANS) {
      checkBoolean(root, f, f, false);
    }
    for (String f : chat ? CHAT_BOOLEANS : List.<String>of()) {
      checkBoolean(root, f, f, false);
    }
    for (String f : OPTIONAL_BOOLEANS) {
      checkBoolean(root, f, f, true);
    }
    for (String f : chat ? CHAT_OPTIONAL_BOOLEANS : COMPLETION_OPTIONAL_BOOLEANS) {
      checkBoolean(root, f, f, true);
    }
    JsonNode so = root.get("stream_options");
    if (so != null && !so.isNull()) {
      if (!so.isObject()) {
        throw Rejection.badRequest(LaxInteger.validationError("stream_options", so, "model_type",
            "Input should be a valid dictionary or instance of StreamOptions"), null);
      }
      for (String f : STREAM_OPTIONS_BOOLEANS) {
        checkBoolean(so, f, "stream_options." + f, true);
      }
    }
  }

  /**
   * Checks the {@code bool} fields of vLLM's {@code TokenizeCompletionRequest} / {@code
   * TokenizeChatRequest} ({@code add_special_tokens}; for chat {@code add_generation_prompt} and
   * {@code continue_final_message}; the optional {@code return_token_strs}) as {@link #checkBooleans}.
   */
  static void checkTokenizeBooleans(boolean chat, JsonNode root) throws Rejection {
    checkBoolean(root, "add_special_tokens", "add_special_tokens", false);
    if (chat) {
      checkBoolean(root, "add_generation_prompt", "add_generation_prompt", false);
      checkBoolean(root, "continue_final_message", "continue_final_message", false);
    }
    checkBoolean(root, "return_token_strs", "return_token_strs", true);
  }

  private static void checkBoolean(JsonNode parent, String field, String at, boolean optional) throws Rejection {
    JsonNode v = parent.get(field);
    if (v == null || (optional && v.isNull())) {
      return;
    }
    LaxBoolean.Result r = LaxBoolean.of(v);
    if (!r.ok()) {
      throw Rejection.badRequest(LaxBoolean.validationError(at, v, r.failure()), null);
    }
  }

  /** A {@code bool} field already checked by {@link #checkBooleans}: its value, or {@code dflt} when absent. */
  private static boolean bool(JsonNode parent, String field, boolean dflt) {
    JsonNode v = parent.get(field);
    if (v == null) {
      return dflt;
    }
    return LaxBoolean.of(v).value(); // null (None) and refused values are false
  }

  /** Checks an optional float field as pydantic's lax mode does: a number, or a string holding one. */
  private static void number(JsonNode root, String field) {
    JsonNode v = root.get(field);
    if (v == null || v.isNull() || v.isNumber()) {
      return;
    }
    if (v.isTextual()) {
      try {
        Double.parseDouble(v.asText().trim());
        return;
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(field + ": expected a number, got " + v);
      }
    }
    throw new IllegalArgumentException(field + ": expected a number, got " + v);
  }

  /** An {@code Optional[int]} field in the 64-bit range read as pydantic's lax int; 0 when absent or null. */
  private static long optionalLong(JsonNode root, String field) {
    JsonNode v = root.get(field);
    if (v == null || v.isNull()) {
      return 0;
    }
    LaxInteger.Result lax = LaxInteger.of(v);
    boolean inRange = !v.isIntegralNumber() || v.canConvertToLong();
    if (!lax.ok() || !inRange) {
      throw new IllegalArgumentException(field + ": expected an integer, got " + v);
    }
    return lax.value();
  }

  private static int integer(JsonNode root, String field, int dflt, int min) {
    JsonNode v = root.get(field);
    if (v == null || v.isNull()) {
      return dflt;
    }
    // pydantic's lax mode, as vLLM reads it: 5, 5.0, "5" and true are integers, 5.5 and "x" are not.
    LaxInteger.Result lax = LaxInteger.of(v);
    if (!lax.ok() || lax.value() != lax.intValue()) {
      throw new IllegalArgumentException(field + ": expected an integer, got " + v);
    }
    int i = lax.intValue();
    if (i < min) {
      throw new IllegalArgumentException(field + ": " + i + " (expected: >= " + min + ")");
    }
    return i;
  }
}
