package dev.kvroute.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvroute.core.BackendId;
import dev.kvroute.core.load.BackendLoad;
import dev.kvroute.core.policy.Candidate;
import dev.kvroute.core.policy.Decision;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.RequestView;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.ConfigLoader;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.util.ReferenceCountUtil;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The admin API, on its own listener ({@code admin.port}, loopback by default):
 *
 * <ul>
 *   <li>{@code GET /admin/backends}: every backend with its health, circuit state, load, KV capacity
 *       and the tokens the prefix index attributes to it.
 *   <li>{@code POST /admin/backends}: adds a backend; body {@code {"url": ..., "name": ...,
 *       "capacityTokens": ...}} (only {@code url} required) → 201 with the backend, 409 if the name
 *       or the URL is already in use, 400 if invalid.
 *   <li>{@code DELETE /admin/backends/{name}}: removes a backend (its index view at once; in-flight
 *       requests finish) → 200, or 404.
 *   <li>{@code POST /admin/explain[?endpoint=/v1/chat/completions]}: the routing decision the body
 *       would get now, without sending it or changing any state; the endpoint defaults to the one
 *       the body's shape implies ({@code messages}: chat, {@code prompt}: completions,
 *       {@code text}/{@code input_ids}: {@code /generate}).
 *   <li>{@code GET /admin/config}: the effective configuration as YAML (token redacted).
 *   <li>{@code POST /admin/lora/load} and {@code /admin/lora/unload}: vLLM's runtime LoRA load/unload
 *       forwarded to one backend, a list, or all (see {@link LoraAdmin}).
 * </ul>
 *
 * When {@code admin.token} is set every request needs {@code Authorization: Bearer <token>}; the
 * token, the body limit and the protocol checks are applied on the request head, before any body is
 * read ({@link AdminInitializer}); those refusals arrive here as {@link RejectedRequest}s and are
 * answered with the connection closed. Errors are OpenAI-style JSON.
 *
 * <p>Pipeline: see {@link AdminInitializer} (auto-read on).
 *
 * <p>Not thread-safe: one per admin connection.
 */
final class AdminHandler extends ChannelInboundHandlerAdapter {
  private static final System.Logger LOG = System.getLogger(AdminHandler.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  private final ProxyContext px;

  AdminHandler(ProxyContext px) {
    this.px = px;
  }

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (msg instanceof RejectedRequest) {
      ((RejectedRequest) msg).answer(ctx.channel());
      return;
    }
    if (!(msg instanceof FullHttpRequest)) {
      ReferenceCountUtil.release(msg);
      return;
    }
    FullHttpRequest req = (FullHttpRequest) msg;
    try {
      serve(ctx, req);
    } finally {
      req.release();
    }
  }

  private void serve(ChannelHandlerContext ctx, FullHttpRequest req) {
    FullHttpResponse resp;
    try {
      resp = handle(ctx, req);
    } catch (RuntimeException e) {
      LOG.log(Level.ERROR, "admin request failed: " + req.method() + " " + req.uri(), e);
      resp = error(ctx, HttpResponseStatus.INTERNAL_SERVER_ERROR, "internal error: " + e);
    }
    if (resp == null) {
      return; // answered later (LoRA load/unload waits for the backends)
    }
    boolean keepAlive = HttpUtil.isKeepAlive(req);
    Headers.connection(resp.headers(), req.protocolVersion(), keepAlive);
    var f = ctx.writeAndFlush(resp);
    if (!keepAlive) {
      f.addListener(ChannelFutureListener.CLOSE);
    }
  }

  private FullHttpResponse handle(ChannelHandlerContext ctx, FullHttpRequest req) {
    QueryStringDecoder q = new QueryStringDecoder(req.uri());
    String path = q.path();
    HttpMethod m = req.method();
    if (path.equals("/admin/backends")) {
      if (m.equals(HttpMethod.GET)) {
        return json(HttpResponseStatus.OK, listBackends());
      }
      if (m.equals(HttpMethod.POST)) {
        return addBackend(ctx, req);
      }
      return notAllowed(ctx, m, path, "GET, POST");
    }
    if (path.startsWith("/admin/backends/")) {
      if (!m.equals(HttpMethod.DELETE)) {
        return notAllowed(ctx, m, path, "DELETE");
      }
      String name = URLDecoder.decode(path.substring("/admin/backends/".length()), StandardCharsets.UTF_8);
      if (name.isBlank() || px.backends().remove(BackendId.of(name)) == null) {
        return error(ctx, HttpResponseStatus.NOT_FOUND, "no backend named " + name);
      }
      LOG.log(Level.INFO, "backend {0} removed through the admin API", name);
      ObjectNode body = JSON.createObjectNode().put("removed", name);
      return json(HttpResponseStatus.OK, body);
    }
    if (path.equals("/admin/explain")) {
      if (!m.equals(HttpMethod.POST)) {
        return notAllowed(ctx, m, path, "POST");
      }
      return explain(ctx, req, q);
    }
    if (path.equals("/admin/lora/load") || path.equals("/admin/lora/unload")) {
      if (!m.equals(HttpMethod.POST)) {
        return notAllowed(ctx, m, path, "POST");
      }
      return LoraAdmin.handle(ctx, req, px, path.endsWith("/load"));
    }
    if (path.equals("/admin/config")) {
      if (!m.equals(HttpMethod.GET)) {
        return notAllowed(ctx, m, path, "GET");
      }
      String yaml = ConfigLoader.toYaml(px.config().withoutSecrets());
      return text(HttpResponseStatus.OK, "application/yaml", yaml);
    }
    return error(ctx, HttpResponseStatus.NOT_FOUND, "no admin route for " + m + " " + path);
  }

  private ObjectNode listBackends() {
    ObjectNode root = JSON.createObjectNode();
    root.put("policy", px.config().policy().name());
    root.put("indexBytes", px.core().index().estimatedBytes());
    ArrayNode list = root.putArray("backends");
    for (Backend b : px.backends().all()) {
      list.add(describe(b));
    }
    return root;
  }

  private ObjectNode describe(Backend b) {
    ObjectNode n = JSON.createObjectNode();
    n.put("name", b.id().name());
    n.put("url", b.config().url().toString());
    n.put("healthy", b.healthy());
    n.put("circuit", b.breaker().state().name().toLowerCase(java.util.Locale.ROOT));
    n.put("routable", b.routable());
    n.put("draining", b.draining());
    n.put("capacityTokens", b.capacityTokens());
    n.put("capacitySource", b.config().capacityTokens() > 0 ? "configured"
        : b.capacityKnown() ? "engine-metrics" : "default");
    n.put("indexTokens", px.core().index().sizeTokens(b.id()));
    n.set("load", load(px.core().loads().load(b.id())));
    ServedModels served = b.models();
    n.put("modelsSource", served.source());
    n.set("models", JSON.valueToTree(served.cards().keySet()));
    return n;
  }

  private static ObjectNode load(BackendLoad l) {
    ObjectNode n = JSON.createObjectNode();
    n.put("inFlightRequests", l.inFlightRequests());
    n.put("prefillingRequests", l.prefillingRequests());
    n.put("activeDecodes", l.activeDecodes());
    n.put("inFlightPrefillTokens", l.inFlightPrefillTokens());
    n.put("foreignRequests", l.foreignRequests());
    n.put("foreignWaiting", l.foreignWaiting());
    if (l.engineKvUsage() >= 0) {
      n.put("engineKvUsage", l.engineKvUsage());
    } else {
      n.putNull("engineKvUsage");
    }
    return n;
  }

  /** The fields {@code POST /admin/backends} takes; any other is refused. */
  private static final List<String> ADD_FIELDS = List.of("capacityTokens", "name", "url");

  private FullHttpResponse addBackend(ChannelHandlerContext ctx, FullHttpRequest req) {
    BackendConfig cfg;
    try {
      JsonNode body = JSON.readTree(ByteBufUtil.getBytes(req.content()));
      if (body == null || !body.isObject() || !body.path("url").isTextual()) {
        return error(ctx, HttpResponseStatus.BAD_REQUEST, "body: expected {\"url\": \"http://host:port\", \"name\"?: ..., \"capacityTokens\"?: N}");
      }
      for (java.util.Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
        String field = it.next();
        if (!ADD_FIELDS.contains(field)) { // a typo such as "capacityToken" was ignored without a word
          return error(ctx, HttpResponseStatus.BAD_REQUEST, field + ": unknown key (expected one of: "
              + String.join(", ", ADD_FIELDS) + ")");
        }
      }
      String url = body.get("url").asText();
      java.net.URI uri;
      try {
        uri = new java.net.URI(url);
      } catch (java.net.URISyntaxException e) {
        return error(ctx, HttpResponseStatus.BAD_REQUEST, "url: " + url + " (expected: an http://host[:port][/path] URL)");
      }
      JsonNode name = body.get("name");
      if (name != null && !name.isNull() && !name.isTextual()) {
        return error(ctx, HttpResponseStatus.BAD_REQUEST, "name: expected a string, got " + name.getNodeType().name().toLowerCase(java.util.Locale.ROOT));
      }
      JsonNode capacity = body.get("capacityTokens");
      if (capacity != null && !capacity.isNull() && !(capacity.isIntegralNumber() && capacity.canConvertToLong())) {
        return error(ctx, HttpResponseStatus.BAD_REQUEST, "capacityTokens: " + capacity + " (expected: a non-negative integer)");
      }
      cfg = new BackendConfig(uri, name == null || name.isNull() ? null : name.asText(),
          capacity == null || capacity.isNull() ? 0 : capacity.longValue());
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      com.fasterxml.jackson.core.JsonLocation at = e.getLocation();
      return error(ctx, HttpResponseStatus.BAD_REQUEST, "body: malformed JSON"
          + (at == null ? "" : " at line " + at.getLineNr() + ", column " + at.getColumnNr())
          + ": " + e.getOriginalMessage());
    } catch (IOException | IllegalArgumentException e) {
      return error(ctx, HttpResponseStatus.BAD_REQUEST, e.getMessage());
    }
    Backend b;
    try {
      b = px.backends().add(cfg);
    } catch (IllegalArgumentException e) {
      return error(ctx, HttpResponseStatus.CONFLICT, e.getMessage());
    }
    LOG.log(Level.INFO, "backend {0} ({1}) added through the admin API", b.id(), cfg.url());
    return json(HttpResponseStatus.CREATED, describe(b));
  }

  private FullHttpResponse explain(ChannelHandlerContext ctx, FullHttpRequest req, QueryStringDecoder q) {
    byte[] body = ByteBufUtil.getBytes(req.content());
    Endpoint endpoint;
    List<String> given = q.parameters().get("endpoint");
    if (given != null && !given.isEmpty()) {
      endpoint = Endpoint.forPath(given.get(0));
      if (endpoint == null) {
        return error(ctx, HttpResponseStatus.BAD_REQUEST, "endpoint: " + given.get(0)
            + " (expected: /v1/chat/completions, /v1/completions or /generate)");
      }
    } else {
      endpoint = inferEndpoint(body);
    }
    RequestView view;
    try {
      view = px.parser().parse(endpoint, body, req.headers()::get);
    } catch (InvalidRequestException e) {
      FullHttpResponse r = HttpErrors.response(ctx.alloc(), HttpResponseStatus.BAD_REQUEST, e.getMessage(), e.param(), true);
      return r;
    }
    ModelCatalog.Resolved model = px.models().resolve(view, () -> body, px.backends().all());
    if (model.unknown()) {
      return error(ctx, HttpResponseStatus.NOT_FOUND, "The model `" + model.requested() + "` does not exist.");
    }
    List<BackendId> routable = new ArrayList<>();
    for (Backend b : px.backends().routable(List.of())) {
      if (model.serves(b)) {
        routable.add(b.id());
      }
    }
    if (routable.isEmpty()) {
      return error(ctx, HttpResponseStatus.SERVICE_UNAVAILABLE, "no healthy backend");
    }
    int[] tokens;
    try {
      tokens = px.core().tokens(model.tokenized(view));
    } catch (dev.kvroute.core.tokenize.ChatTemplateException e) { // the engine's 400, as the proxy answers
      return HttpErrors.response(ctx.alloc(), HttpResponseStatus.BAD_REQUEST, e.getMessage(), null, true);
    }
    Decision d = px.core().explain(tokens, view.sessionKey(), model.namespace(), routable);
    ObjectNode root = JSON.createObjectNode();
    root.put("endpoint", endpoint.path());
    root.put("model", model.served());
    root.put("baseModel", model.base());
    root.put("adapter", model.adapter());
    root.put("promptTokens", tokens.length);
    root.put("sessionKey", view.sessionKey());
    root.put("backend", d.backend().name());
    root.put("policy", d.policy());
    root.put("rule", d.rule().name().toLowerCase(java.util.Locale.ROOT));
    root.put("matchedTokens", d.matchedTokens());
    root.put("detail", d.detail());
    ArrayNode cands = root.putArray("candidates");
    for (Candidate c : d.candidates()) {
      ObjectNode n = cands.addObject();
      n.put("backend", c.backend().name());
      n.put("matchedTokens", c.matchedTokens());
      n.set("load", load(c.load()));
    }
    return json(HttpResponseStatus.OK, root);
  }

  private static Endpoint inferEndpoint(byte[] body) {
    try {
      JsonNode n = JSON.readTree(body);
      if (n != null && n.has("prompt")) {
        return Endpoint.COMPLETIONS;
      }
      if (n != null && (n.has("text") || n.has("input_ids"))) {
        return Endpoint.SGLANG_GENERATE;
      }
    } catch (IOException e) {
      // the parser reports malformed JSON with its own message
    }
    return Endpoint.CHAT_COMPLETIONS;
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    px.metrics().channelException("admin");
    LOG.log(Level.DEBUG, () -> ctx.channel() + " admin error: " + cause);
    ctx.close();
  }

  private static FullHttpResponse json(HttpResponseStatus status, JsonNode body) {
    return text(status, "application/json", body.toString());
  }

  private static FullHttpResponse text(HttpResponseStatus status, String contentType, String body) {
    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
        Unpooled.copiedBuffer(body, StandardCharsets.UTF_8));
    r.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
        .setInt(HttpHeaderNames.CONTENT_LENGTH, r.content().readableBytes());
    return r;
  }

  private static FullHttpResponse error(ChannelHandlerContext ctx, HttpResponseStatus status, String message) {
    return HttpErrors.response(ctx.alloc(), status, message, null, true);
  }

  /** 405 for {@code m} on {@code path}, with {@code Allow} naming the methods it takes (RFC 9110 15.5.6). */
  private static FullHttpResponse notAllowed(ChannelHandlerContext ctx, HttpMethod m, String path, String allow) {
    FullHttpResponse r = error(ctx, HttpResponseStatus.METHOD_NOT_ALLOWED, m + " " + path + " (expected: "
        + allow.replace(", ", " or ") + ")");
    r.headers().set(HttpHeaderNames.ALLOW, allow);
    return r;
  }
}
