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
import dev.kvroute.core.request.PromptSegment;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.engine.model.EngineConfig;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.ReferenceCountUtil;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Serves one HTTP/1.1 connection of a mock engine: routes each request to its endpoint, validates
 * generation requests as vLLM does, and runs them as a {@link GenerationExchange}. Requests on one
 * connection are answered in order; a pipelined request waits until the previous response is complete.
 * When the connection closes, the request in progress is aborted in the engine at once.
 *
 * <p>About 770 lines, as one unit for now: {@code generate}'s checks follow vLLM's order of
 * validation (model, sampling fields, stream options, prompts, context length), each answered on the
 * spot, and several branches are changing at once (model routing, tokenizers, KV events). Its next
 * step (issue 12) is to hand those checks to a plain class returning either the parameters of the
 * generation or the error to answer, tested without sockets.
 *
 * <p>Not thread-safe; runs on the engine's event loop.
 */
final class MockEngineHandler extends ChannelInboundHandlerAdapter {
  private static final System.Logger LOG = System.getLogger(MockEngineHandler.class.getName());
  static final ObjectMapper MAPPER = new ObjectMapper();
  static final String FAULT_HEADER = "x-mock-fault";
  private static final String VERSION = "0.11.0+kvroute.mock";
  /** Unused ids tolerated between vocabulary ids (o200k_base has 19 before {@code <|endofprompt|>}). */
  private static final int VOCABULARY_GAP = 64;

  private final NettyMockEngine engine;
  private final ArrayDeque<FullHttpRequest> pending = new ArrayDeque<>();
  private ChannelHandlerContext ctx;
  private boolean busy;
  private GenerationExchange exchange;

  MockEngineHandler(NettyMockEngine engine) {
    this.engine = engine;
  }

  @Override
  public void handlerAdded(ChannelHandlerContext ctx) {
    this.ctx = ctx;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (!(msg instanceof FullHttpRequest req)) {
      ReferenceCountUtil.release(msg);
      return;
    }
    if (busy) {
      pending.addLast(req);
      return;
    }
    process(req);
  }

  @Override
  public void channelInactive(ChannelHandlerContext ctx) {
    if (exchange != null) {
      exchange.cancel();
      exchange = null;
    }
    FullHttpRequest r;
    while ((r = pending.pollFirst()) != null) {
      r.release();
    }
    ctx.fireChannelInactive();
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    LOG.log(System.Logger.Level.DEBUG, "mock engine connection " + ctx.channel().id() + " failed", cause);
    ctx.close();
  }

  /** The response to the current request is complete; serves the next pipelined one, if any. */
  void done() {
    busy = false;
    exchange = null;
    FullHttpRequest next = pending.pollFirst();
    if (next != null) {
      if (ctx.channel().isActive()) {
        process(next);
      } else {
        next.release();
      }
    }
  }

  private void process(FullHttpRequest req) {
    busy = true;
    if (req.decoderResult().isFailure()) {
      // uvicorn (h11) answers a request it cannot parse with this plain-text 400 and closes
      req.release();
      respond(false, 400, "text/plain; charset=utf-8",
          Unpooled.copiedBuffer("Invalid HTTP request received.", StandardCharsets.UTF_8), null);
      return;
    }
    try {
      dispatch(req);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "mock engine failed on " + req.method() + " " + req.uri(), e);
      respondJson(req, 500, Responses.error(500, Responses.INTERNAL_SERVER_ERROR, String.valueOf(e), null), null);
    } finally {
      req.release();
    }
  }

  private void dispatch(FullHttpRequest req) {
    String path = new QueryStringDecoder(req.uri()).path();
    HttpMethod m = req.method();
    switch (path) {
      case "/health" -> {
        if (m.equals(HttpMethod.GET) || m.equals(HttpMethod.HEAD)) {
          health(req);
        } else {
          notAllowed(req);
        }
      }
      case "/ping" -> {
        if (m.equals(HttpMethod.GET) || m.equals(HttpMethod.POST)) {
          health(req);
        } else {
          notAllowed(req);
        }
      }
      case "/metrics" -> metrics(req);
      case "/v1/models" -> {
        if (m.equals(HttpMethod.GET)) {
          models(req);
        } else {
          notAllowed(req);
        }
      }
      case "/v1/load_lora_adapter", "/v1/unload_lora_adapter" -> loraUpdate(req, path);
      case "/version" -> {
        if (m.equals(HttpMethod.GET)) {
          respondJson(req, 200, "{\"version\":" + Json.quote(VERSION) + "}", null);
        } else {
          notAllowed(req);
        }
      }
      case "/load" -> {
        if (m.equals(HttpMethod.GET)) {
          respondJson(req, 200, "{\"server_load\":" + engine.driver.model().activeRequests() + "}", null);
        } else {
          notAllowed(req);
        }
      }
      case "/tokenize" -> {
        if (m.equals(HttpMethod.POST)) {
          tokenize(req);
        } else {
          notAllowed(req);
        }
      }
      case "/detokenize" -> {
        if (m.equals(HttpMethod.POST)) {
          detokenize(req);
        } else {
          notAllowed(req);
        }
      }
      case "/v1/chat/completions" -> {
        if (m.equals(HttpMethod.POST)) {
          generate(req, Endpoint.CHAT_COMPLETIONS);
        } else {
          notAllowed(req);
        }
      }
      case "/v1/completions" -> {
        if (m.equals(HttpMethod.POST)) {
          generate(req, Endpoint.COMPLETIONS);
        } else {
          notAllowed(req);
        }
      }
      case "/mock/faults" -> {
        if (m.equals(HttpMethod.GET)) {
          respondJson(req, 200, faultsJson(), null);
        } else if (m.equals(HttpMethod.PUT) || m.equals(HttpMethod.POST)) {
          setFaults(req);
        } else {
          notAllowed(req);
        }
      }
      case "/reset_prefix_cache" -> {
        if (m.equals(HttpMethod.POST)) {
          // vLLM answers 200 with an empty body whether or not blocks in use kept the cache
          engine.driver.resetPrefixCache();
          respond(HttpUtil.isKeepAlive(req), 200, null, Unpooled.EMPTY_BUFFER, null);
        } else {
          notAllowed(req);
        }
      }
      default -> respondJson(req, 404, "{\"detail\":\"Not Found\"}", null);
    }
  }

  // ---------------------------------------------------------------- simple endpoints

  private void health(FullHttpRequest req) {
    HealthFault h = engine.faults.health();
    String header = req.headers().get(FAULT_HEADER);
    int status = h.status();
    long delay = h.delayMillis();
    if (header != null) {
      try {
        FaultPlan p = FaultPlan.parse(header);
        if (p.stall()) {
          return; // never answers; the connection stays busy until the client closes it
        }
        if (p.closeBeforeHeaders()) {
          ctx.close();
          return;
        }
        if (p.status() != 0) {
          status = p.status();
        }
      } catch (IllegalArgumentException e) {
        HealthFault hf = HealthFault.parse(header);
        status = hf.status();
        delay = hf.delayMillis();
      }
    }
    boolean keepAlive = HttpUtil.isKeepAlive(req);
    int finalStatus = status;
    Runnable answer = () -> respond(keepAlive, finalStatus, null, Unpooled.EMPTY_BUFFER, null);
    if (delay > 0) {
      ctx.executor().schedule(answer, delay, TimeUnit.MILLISECONDS);
    } else {
      answer.run();
    }
  }

  private void metrics(FullHttpRequest req) {
    EngineConfig config = engine.options.engine();
    String text = engine.metrics.render(
        engine.driver.model().stats(), config, engine.driver.modelNow() / 1e9, engine.options.timeScale())
        + engine.metrics.renderLora(engine.driver.loraSlots(), engine.driver.waitingAdapters());
    respond(HttpUtil.isKeepAlive(req), 200, "text/plain; version=0.0.4; charset=utf-8",
        Unpooled.wrappedBuffer(text.getBytes(StandardCharsets.UTF_8)), null);
  }

  private void models(FullHttpRequest req) {
    respondJson(req, 200, engine.models.modelsJson(), null);
  }

  /**
   * {@code POST /v1/load_lora_adapter} and {@code /v1/unload_lora_adapter}: served only with runtime
   * LoRA updating on (vLLM's {@code VLLM_ALLOW_RUNTIME_LORA_UPDATING}), else they are unknown paths.
   */
  private void loraUpdate(FullHttpRequest req, String path) {
    if (!engine.options.models().runtimeLoraUpdating()) {
      respondJson(req, 404, "{\"detail\":\"Not Found\"}", null);
      return;
    }
    if (!req.method().equals(HttpMethod.POST)) {
      notAllowed(req);
      return;
    }
    JsonNode body = readJson(req, null);
    if (body == null) {
      return;
    }
    boolean load = path.equals("/v1/load_lora_adapter");
    EngineModels.Answer a = load ? engine.models.load(body) : engine.models.unload(body);
    if (!load && a.status() == 200) {
      engine.driver.loraSlots().unload(body.get("lora_name").asText());
    }
    respond(HttpUtil.isKeepAlive(req), a.status(), a.contentType(),
        Unpooled.wrappedBuffer(a.body().getBytes(StandardCharsets.UTF_8)), null);
  }

  private void tokenize(FullHttpRequest req) {
    JsonNode root = readJson(req, null);
    if (root == null) {
      return;
    }
    Endpoint ep = root.has("messages") ? Endpoint.CHAT_COMPLETIONS : Endpoint.COMPLETIONS;
    int[] tokens;
    try {
      RequestView view = engine.parser.parse(ep, ByteBufUtil.getBytes(req.content()), headerLookup(req));
      tokens = engine.promptTokenizer.tokenize(view);
    } catch (InvalidRequestException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST, e.getMessage(), e.param()), null);
      return;
    } catch (dev.kvroute.core.tokenize.ChatTemplateException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR, e.getMessage(), null), null);
      return;
    }
    StringBuilder sb = new StringBuilder(32 + tokens.length * 7);
    sb.append("{\"count\":").append(tokens.length).append(",\"max_model_len\":")
        .append(engine.options.engine().maxModelLen()).append(",\"tokens\":[");
    for (int i = 0; i < tokens.length; i++) {
      if (i > 0) {
        sb.append(',');
      }
      sb.append(tokens[i]);
    }
    sb.append("],\"token_strs\":null}");
    respondJson(req, 200, sb.toString(), null);
  }

  private void detokenize(FullHttpRequest req) {
    JsonNode root = readJson(req, null);
    if (root == null) {
      return;
    }
    JsonNode t = root.get("tokens");
    if (t == null || !t.isArray()) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST,
          "tokens: expected a list of token ids", "tokens"), null);
      return;
    }
    int[] ids = new int[t.size()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = t.get(i).asInt();
    }
    String text;
    try {
      text = engine.promptTokenizer.tokenizer().decode(ids);
    } catch (IllegalArgumentException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR, e.getMessage(), "tokens"), null);
      return;
    }
    respondJson(req, 200, "{\"prompt\":" + Json.quote(text) + "}", null);
  }

  private String faultsJson() {
    FaultControl f = engine.faults;
    return "{\"requests\":" + Json.quote(f.requests().toString()) + ",\"probability\":" + f.probability()
        + ",\"health\":" + Json.quote(f.health().toString()) + "}";
  }

  private void setFaults(FullHttpRequest req) {
    JsonNode root = readJson(req, null);
    if (root == null) {
      return;
    }
    try {
      FaultPlan plan = root.has("requests") ? FaultPlan.parse(root.get("requests").asText()) : null;
      HealthFault health = root.has("health") ? HealthFault.parse(root.get("health").asText()) : null;
      Double p = root.has("probability") ? root.get("probability").asDouble(-1) : null;
      if (p != null) {
        engine.faults.setProbability(p);
      }
      if (plan != null) {
        engine.faults.setRequests(plan);
      }
      if (health != null) {
        engine.faults.setHealth(health);
      }
    } catch (IllegalArgumentException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST, e.getMessage(), null), null);
      return;
    }
    respondJson(req, 200, faultsJson(), null);
  }

  private void notAllowed(FullHttpRequest req) {
    respondJson(req, 405, "{\"detail\":\"Method Not Allowed\"}", null);
  }

  // ---------------------------------------------------------------- generation

  private void generate(FullHttpRequest req, Endpoint endpoint) {
    String requestIdHeader = req.headers().get("x-request-id");
    String echoId = requestIdHeader != null ? requestIdHeader : UUID.randomUUID().toString().replace("-", "");
    FaultPlan fault;
    try {
      fault = chooseFault(req.headers().get(FAULT_HEADER));
    } catch (IllegalArgumentException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST, e.getMessage(), FAULT_HEADER), echoId);
      return;
    }
    if (fault.closeBeforeHeaders()) {
      ctx.close();
      return;
    }
    if (fault.stall()) {
      return; // never answers; busy until the client closes the connection
    }
    if (fault.status() != 0) {
      int s = fault.status();
      respondJson(req, s, Responses.error(s, Responses.typeFor(s), "mock fault: status " + s, null), echoId);
      return;
    }
    if (engine.faults.health().dead()) {
      respondJson(req, 500, Responses.error(500, Responses.INTERNAL_SERVER_ERROR,
          "EngineCore encountered an issue. See stack trace (above) for the root cause.", null), echoId);
      return;
    }
    byte[] body = ByteBufUtil.getBytes(req.content());
    JsonNode root = readGenerationJson(body, req, echoId);
    if (root == null) {
      return;
    }
    EngineConfig cfg = engine.options.engine();
    JsonNode model = root.get("model");
    String modelName = model == null || model.isNull() ? null : model.asText();
    String lora = null;
    if (modelName != null && !modelName.isEmpty() && !engine.models.isBase(modelName)) {
      if (!engine.models.isAdapter(modelName)) {
        engine.metrics.modelNotFound++;
        respondJson(req, 404, Responses.error(404, Responses.NOT_FOUND_ERROR,
            "The model `" + modelName + "` does not exist.", "model"), echoId);
        return;
      }
      lora = modelName;
    }
    String served = engine.models.responseModel(lora);
    boolean stream;
    int n;
    int minTokens;
    boolean ignoreEos;
    long seed;
    Integer maxTokensField;
    try {
      stream = bool(root, "stream", false);
      n = integer(root, "n", 1, Integer.MIN_VALUE);
      if (n < 1) {
        // SamplingParams._verify_args (a ValueError, answered 400 BadRequestError)
        respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR,
            "n must be at least 1, got " + n + ".", "n"), echoId);
        return;
      }
      minTokens = integer(root, "min_tokens", 0, 0);
      ignoreEos = bool(root, "ignore_eos", false);
      // sampling knobs the mock ignores, typed as vLLM's request models type them
      for (String field : NUMBER_FIELDS) {
        number(root, field);
      }
      integer(root, "top_k", 0, Integer.MIN_VALUE);
      JsonNode seedNode = root.get("seed");
      seed = seedNode == null || seedNode.isNull() ? 0 : seedNode.asLong();
      maxTokensField = null;
      if (endpoint == Endpoint.CHAT_COMPLETIONS && present(root, "max_completion_tokens")) {
        maxTokensField = integer(root, "max_completion_tokens", 0, 0);
      } else if (present(root, "max_tokens")) {
        maxTokensField = integer(root, "max_tokens", 0, 0);
      }
    } catch (IllegalArgumentException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST, e.getMessage(), null), echoId);
      return;
    }
    JsonNode streamOptions = root.get("stream_options");
    boolean hasStreamOptions = streamOptions != null && !streamOptions.isNull();
    if (hasStreamOptions && !stream) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST,
          "Stream options can only be defined when `stream=True`.", "stream_options"), echoId);
      return;
    }
    boolean includeUsage = hasStreamOptions && streamOptions.path("include_usage").asBoolean(true);
    boolean continuousUsage = hasStreamOptions && streamOptions.path("continuous_usage_stats").asBoolean(false);

    List<int[]> prompts;
    try {
      prompts = prompts(req, body, endpoint, root);
    } catch (InvalidRequestException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST, e.getMessage(), e.param()), echoId);
      return;
    }
    String invalidPrompt = invalidPrompt(prompts);
    if (invalidPrompt != null) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR, invalidPrompt, null), echoId);
      return;
    }
    int maxLen = cfg.maxModelLen();
    int maxTokens = Integer.MAX_VALUE;
    for (int[] p : prompts) {
      int requested;
      if (maxTokensField != null) {
        requested = maxTokensField;
      } else if (endpoint == Endpoint.COMPLETIONS) {
        requested = 16;
      } else {
        if (p.length >= maxLen) {
          respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR,
              "This model's maximum context length is " + maxLen + " tokens. However, your request has "
                  + p.length + " input tokens. Please reduce the length of the input messages.",
              "input_tokens"), echoId);
          return;
        }
        requested = maxLen - p.length;
      }
      if (requested < 1) {
        respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR,
            "max_tokens must be at least 1, got " + requested + ".", "max_tokens"), echoId);
        return;
      }
      if ((long) p.length + requested > maxLen) {
        respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR,
            "This model's maximum context length is " + maxLen + " tokens. However, you requested "
                + requested + " output tokens and your prompt contains " + p.length
                + " input tokens, for a total of " + (p.length + (long) requested)
                + " tokens. Please reduce the length of the input prompt or the number of requested"
                + " output tokens.",
            "input_tokens"), echoId);
        return;
      }
      maxTokens = requested; // the same for every prompt of a batch (chat has one prompt)
    }
    long outputTokens = (long) n * prompts.size() * maxTokens;
    long outputLimit = (long) cfg.maxNumSeqs() * maxLen;
    if (outputTokens > outputLimit) {
      // replies are drawn in full when the request starts: bound their memory (vLLM has no such limit)
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR,
          "n x prompts x max_tokens = " + outputTokens + " output tokens is more than the mock engine takes in one"
              + " request (max_num_seqs x max_model_len = " + outputLimit + "). Please reduce n or max_tokens.",
          "n"), echoId);
      return;
    }
    if (minTokens > maxTokens) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST_ERROR,
          "min_tokens must be less than or equal to max_tokens=" + maxTokens + ", got " + minTokens + ".",
          "min_tokens"), echoId);
      return;
    }
    String idBase = requestIdHeader;
    if (idBase == null) {
      JsonNode rid = root.get("request_id");
      idBase = rid != null && rid.isTextual() ? rid.asText() : echoId;
    }
    String responseId = (endpoint == Endpoint.CHAT_COMPLETIONS ? "chatcmpl-" : "cmpl-") + idBase;
    boolean http10 = req.protocolVersion().equals(HttpVersion.HTTP_1_0);
    GenerationExchange.Params params = new GenerationExchange.Params(
        endpoint == Endpoint.CHAT_COMPLETIONS, stream, includeUsage, continuousUsage,
        HttpUtil.isKeepAlive(req) && !(stream && http10), http10, responseId, echoId,
        System.currentTimeMillis() / 1000, served, fault, engine.options.enablePromptTokensDetails(), lora);
    exchange = new GenerationExchange(this, ctx, engine, params, prompts, n, maxTokens, minTokens, ignoreEos, seed);
    exchange.start();
  }

  /** The prompts of the request: one for chat; for completions, every prompt of a batch. */
  private List<int[]> prompts(FullHttpRequest req, byte[] body, Endpoint endpoint, JsonNode root)
      throws InvalidRequestException {
    RequestView view = engine.parser.parse(endpoint, body, headerLookup(req));
    List<int[]> prompts = new ArrayList<>();
    try {
      prompts.add(engine.promptTokenizer.tokenize(view));
    } catch (dev.kvroute.core.tokenize.ChatTemplateException e) { // vLLM: 400 for a template error
      throw new InvalidRequestException(e.getMessage(), null);
    }
    if (endpoint == Endpoint.COMPLETIONS) {
      JsonNode p = root.get("prompt");
      boolean batch = p != null && p.isArray() && p.size() > 1 && (p.get(0).isTextual() || p.get(0).isArray());
      if (batch) {
        for (int i = 1; i < p.size(); i++) {
          JsonNode item = p.get(i);
          if (item.isTextual()) {
            prompts.add(engine.promptTokenizer.tokenize(
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
        engine.promptTokenizer.tokenizer().decode(new int[] {(int) t});
        return true;
      } catch (IllegalArgumentException unknown) {
        // an unused id: look a little further
      }
    }
    return false;
  }

  private FaultPlan chooseFault(String header) {
    if (header != null) {
      return FaultPlan.parse(header);
    }
    FaultPlan plan = engine.faults.requests();
    if (plan.isNone()) {
      return plan;
    }
    double p = engine.faults.probability();
    return p >= 1 || engine.faultDraw.nextDouble() < p ? plan : FaultPlan.NONE;
  }

  /** Parses the body as a JSON object, or answers 400 and returns null. */
  private JsonNode readJson(FullHttpRequest req, String echoId) {
    return checkedObject(req, echoId, () -> MAPPER.readTree(ByteBufUtil.getBytes(req.content())));
  }

  /**
   * As {@link #readJson} for a generation request's {@code body}, without a tree of the prompt, which
   * {@link #prompts} reads with the router's parser: {@code messages} is only checked as JSON, and
   * so is a {@code prompt} list of token ids after its first id (a trace's prompt is tens of
   * thousands of ids, and a node per id was most of the engine's allocation in replays). A prompt
   * batch (a list of strings or of id lists) is kept whole, for {@link #prompts}.
   */
  private JsonNode readGenerationJson(byte[] body, FullHttpRequest req, String echoId) {
    return checkedObject(req, echoId, () -> {
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

  /** What {@link #checkedObject} parses. */
  @FunctionalInterface
  private interface JsonRead {
    JsonNode read() throws java.io.IOException;
  }

  /** Runs {@code read}; answers 400 (vLLM's wording) and returns null unless it gives an object. */
  private JsonNode checkedObject(FullHttpRequest req, String echoId, JsonRead read) {
    JsonNode root;
    try {
      root = read.read();
    } catch (JsonProcessingException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST,
          "JSON decode error: " + e.getOriginalMessage(), null), echoId);
      return null;
    } catch (java.io.IOException e) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST, "JSON decode error: " + e, null), echoId);
      return null;
    }
    if (root == null || !root.isObject()) {
      respondJson(req, 400, Responses.error(400, Responses.BAD_REQUEST,
          "Input should be a valid dictionary or object to extract fields from", null), echoId);
      return null;
    }
    return root;
  }

  private static java.util.function.Function<String, String> headerLookup(FullHttpRequest req) {
    return name -> req.headers().get(name);
  }

  private static boolean present(JsonNode root, String field) {
    JsonNode v = root.get(field);
    return v != null && !v.isNull();
  }

  private static boolean bool(JsonNode root, String field, boolean dflt) {
    JsonNode v = root.get(field);
    if (v == null || v.isNull()) {
      return dflt;
    }
    if (!v.isBoolean()) {
      throw new IllegalArgumentException(field + ": expected a boolean, got " + v.getNodeType().name().toLowerCase(Locale.ROOT));
    }
    return v.booleanValue();
  }

  /** Optional float fields of vLLM's request models that the mock engine only type-checks. */
  private static final List<String> NUMBER_FIELDS = List.of(
      "temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty");

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

  private static int integer(JsonNode root, String field, int dflt, int min) {
    JsonNode v = root.get(field);
    if (v == null || v.isNull()) {
      return dflt;
    }
    // Like pydantic's lax mode: 5 and 5.0 are integers, 5.5 and "5" are not.
    boolean integral = v.isIntegralNumber()
        || (v.isFloatingPointNumber() && v.asDouble() == Math.rint(v.asDouble()));
    if (!integral || !v.canConvertToInt()) {
      throw new IllegalArgumentException(field + ": expected an integer, got " + v);
    }
    int i = v.asInt();
    if (i < min) {
      throw new IllegalArgumentException(field + ": " + i + " (expected: >= " + min + ")");
    }
    return i;
  }

  // ---------------------------------------------------------------- writing

  void respondJson(FullHttpRequest req, int status, String json, String requestId) {
    respond(HttpUtil.isKeepAlive(req), status, "application/json",
        Unpooled.wrappedBuffer(json.getBytes(StandardCharsets.UTF_8)), requestId);
  }

  /** Writes a complete response and marks the request done. */
  void respond(boolean keepAlive, int status, String contentType, ByteBuf body, String requestId) {
    FullHttpResponse res = new DefaultFullHttpResponse(
        HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(status), body);
    Responses.serverHeaders(res.headers());
    if (contentType != null) {
      res.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType);
    }
    if (requestId != null) {
      res.headers().set("x-request-id", requestId);
    }
    HttpUtil.setContentLength(res, body.readableBytes());
    if (!keepAlive) {
      res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      ctx.writeAndFlush(res).addListener(ChannelFutureListener.CLOSE);
    } else {
      ctx.writeAndFlush(res);
    }
    done();
  }
}
