package dev.kvroute.engine.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.LaxInteger;
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
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * Serves one HTTP/1.1 connection of a mock engine: routes each request to its endpoint, has
 * generation requests validated as vLLM validates them ({@link GenerationValidator}, no Netty there),
 * and runs them as a {@link GenerationExchange}. Requests on one connection are answered in order; a
 * pipelined request waits until the previous response is complete. When the connection closes, the
 * request in progress is aborted in the engine at once.
 *
 * <p>Not thread-safe; runs on the engine's event loop.
 */
final class MockEngineHandler extends ChannelInboundHandlerAdapter {
  private static final System.Logger LOG = System.getLogger(MockEngineHandler.class.getName());
  static final String FAULT_HEADER = "x-mock-fault";
  private static final String VERSION = "0.11.0+kvroute.mock";

  private final NettyMockEngine engine;
  private final GenerationValidator validator;
  private final ArrayDeque<FullHttpRequest> pending = new ArrayDeque<>();
  private ChannelHandlerContext ctx;
  private boolean busy;
  private GenerationExchange exchange;

  MockEngineHandler(NettyMockEngine engine) {
    this.engine = engine;
    this.validator = new GenerationValidator(engine.parser, engine.promptTokenizer, engine.models,
        engine.options.engine().maxModelLen(), engine.options.engine().maxNumSeqs());
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
        engine.driver.stats(), config, engine.driver.modelNow() / 1e9, engine.options.timeScale())
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
      GenerationValidator.checkTokenizeBooleans(ep == Endpoint.CHAT_COMPLETIONS, root);
    } catch (GenerationValidator.Rejection e) {
      respondJson(req, e.status(), e.json(), null);
      return;
    }
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
      // list[int], read as pydantic's lax int: "7" and 7.0 are 7, "abc" and 1.5 are refused (asInt made them 0
      // and 1, and wrapped 99999999999 to another id)
      LaxInteger.Result id = LaxInteger.of(t.get(i));
      if (!id.ok() || id.value() < Integer.MIN_VALUE || id.value() > Integer.MAX_VALUE) {
        String why = id.ok() ? "Unknown token for decoding: " + t.get(i) : "tokens." + i + ": " + id.failure().message()
            + ", got " + t.get(i);
        respondJson(req, 400, Responses.error(400, id.ok() ? Responses.BAD_REQUEST_ERROR : Responses.BAD_REQUEST, why,
            "tokens"), null);
        return;
      }
      ids[i] = (int) id.value();
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
    GenerationValidator.GenerationRequest g;
    try {
      g = validator.validate(endpoint, ByteBufUtil.getBytes(req.content()), headerLookup(req));
    } catch (GenerationValidator.Rejection r) {
      if (r.unknownModel()) {
        engine.metrics.modelNotFound++;
      }
      respondJson(req, r.status(), r.json(), echoId);
      return;
    }
    String idBase = requestIdHeader != null ? requestIdHeader
        : g.bodyRequestId() != null ? g.bodyRequestId() : echoId;
    String responseId = (endpoint == Endpoint.CHAT_COMPLETIONS ? "chatcmpl-" : "cmpl-") + idBase;
    boolean http10 = req.protocolVersion().equals(HttpVersion.HTTP_1_0);
    GenerationExchange.Params params = new GenerationExchange.Params(
        endpoint == Endpoint.CHAT_COMPLETIONS, g.stream(), g.includeUsage(), g.continuousUsage(),
        HttpUtil.isKeepAlive(req) && !(g.stream() && http10), http10, responseId, echoId,
        System.currentTimeMillis() / 1000, g.servedModel(), fault, engine.options.enablePromptTokensDetails(), g.lora());
    exchange = new GenerationExchange(this, ctx, engine, params, g.prompts(), g.n(), g.maxTokens(), g.minTokens(),
        g.ignoreEos(), g.seed());
    exchange.start();
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

  /** Parses the body as a JSON object, or answers 400 (vLLM's wording) and returns null. */
  private JsonNode readJson(FullHttpRequest req, String echoId) {
    try {
      return GenerationValidator.readObject(
          () -> GenerationValidator.MAPPER.readTree(ByteBufUtil.getBytes(req.content())));
    } catch (GenerationValidator.Rejection r) {
      respondJson(req, r.status(), r.json(), echoId);
      return null;
    }
  }

  private static java.util.function.Function<String, String> headerLookup(FullHttpRequest req) {
    return name -> req.headers().get(name);
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
