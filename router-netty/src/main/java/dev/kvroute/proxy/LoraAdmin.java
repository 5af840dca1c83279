package dev.kvroute.proxy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvroute.core.BackendId;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The admin API's LoRA endpoints: {@code POST /admin/lora/load} and {@code POST /admin/lora/unload}
 * forward vLLM's {@code POST /v1/load_lora_adapter} ({@code {"lora_name", "lora_path"}}) and
 * {@code /v1/unload_lora_adapter} ({@code {"lora_name"}}) to the backends named in {@code "backends"}
 * (a name or a list; absent: every backend to load, and to unload every backend that lists the adapter
 * or whose models are not known yet, 404 if none), then read those backends' served models again
 * before answering, so that the router routes the adapter (or stops routing it) from the answer on.
 *
 * <p>Answer: 200 when every backend answered 2xx, else 502; the body lists each backend's status and
 * body ({@code {"results": {"gpu-0": {"status": 200, "body": "Success: ..."}}}}). 400 for a body
 * without {@code lora_name} (and {@code lora_path} to load), or with either blank or an empty {@code
 * backends} list, 404 for a backend name not registered.
 * vLLM serves these paths only with {@code VLLM_ALLOW_RUNTIME_LORA_UPDATING=True}; a backend without
 * it answers 404, which the result shows.
 *
 * <p>Stateless and thread-safe; the answer is written from the control client's threads.
 */
final class LoraAdmin {
  private static final System.Logger LOG = System.getLogger(LoraAdmin.class.getName());
  private static final ObjectMapper JSON = new ObjectMapper();

  private LoraAdmin() {}

  /**
   * Starts a load ({@code load}) or unload; returns an error response to write now, or {@code null}
   * when the answer will be written to {@code ctx} once every backend answered.
   */
  static FullHttpResponse handle(ChannelHandlerContext ctx, FullHttpRequest req, ProxyContext px, boolean load) {
    JsonNode body;
    try {
      body = JSON.readTree(ByteBufUtil.getBytes(req.content()));
    } catch (IOException e) {
      return HttpErrors.response(ctx.alloc(), HttpResponseStatus.BAD_REQUEST, "body: malformed JSON", null, true);
    }
    if (body == null || !body.isObject() || !body.path("lora_name").isTextual()
        || (load && !body.path("lora_path").isTextual())) {
      return HttpErrors.response(ctx.alloc(), HttpResponseStatus.BAD_REQUEST, load
          ? "body: expected {\"lora_name\": ..., \"lora_path\": ..., \"backends\"?: [names]}"
          : "body: expected {\"lora_name\": ..., \"backends\"?: [names]}", null, true);
    }
    if (body.path("lora_name").asText().isBlank() || (load && body.path("lora_path").asText().isBlank())) {
      String field = body.path("lora_name").asText().isBlank() ? "lora_name" : "lora_path";
      return HttpErrors.response(ctx.alloc(), HttpResponseStatus.BAD_REQUEST, field + ": empty (expected: "
          + (field.equals("lora_name") ? "the adapter's name" : "the adapter's path on the engines") + ")", field, true);
    }
    List<Backend> targets = new ArrayList<>();
    JsonNode named = body.get("backends");
    if (named != null && named.isArray() && named.isEmpty()) {
      return HttpErrors.response(ctx.alloc(), HttpResponseStatus.BAD_REQUEST, "backends: [] (expected: one or more "
          + "backend names, or no \"backends\" for every backend)", "backends", true);
    }
    if (named == null || named.isNull()) {
      String adapter = body.get("lora_name").asText();
      for (Backend b : px.backends().all()) {
        // an unload goes where the adapter is: a replica that never had it would answer 404
        if (load || !b.models().known() || b.models().card(adapter) != null) {
          targets.add(b);
        }
      }
      if (!load && targets.isEmpty()) {
        return HttpErrors.response(ctx.alloc(), HttpResponseStatus.NOT_FOUND, "lora_name: no backend lists adapter "
            + adapter, "lora_name", true);
      }
    } else {
      List<JsonNode> names = new ArrayList<>();
      if (named.isArray()) {
        named.forEach(names::add);
      } else {
        names.add(named);
      }
      for (JsonNode n : names) {
        Backend b = n.isTextual() ? px.backends().get(BackendId.of(n.asText())) : null;
        if (b == null) {
          return HttpErrors.response(ctx.alloc(), HttpResponseStatus.NOT_FOUND, "backends: no backend named " + n,
              "backends", true);
        }
        targets.add(b);
      }
    }
    if (targets.isEmpty()) {
      return HttpErrors.response(ctx.alloc(), HttpResponseStatus.NOT_FOUND, "no backend registered", null, true);
    }
    ObjectNode forward = JSON.createObjectNode();
    forward.put("lora_name", body.get("lora_name").asText());
    if (load) {
      forward.put("lora_path", body.get("lora_path").asText());
      if (body.has("load_inplace")) {
        forward.set("load_inplace", body.get("load_inplace"));
      }
    }
    byte[] bytes = forward.toString().getBytes(StandardCharsets.UTF_8);
    String path = load ? "/v1/load_lora_adapter" : "/v1/unload_lora_adapter";
    Duration timeout = px.config().timeouts().firstByte();
    Map<String, CompletableFuture<ControlClient.Response>> sent = new LinkedHashMap<>();
    List<CompletableFuture<?>> all = new ArrayList<>();
    for (Backend b : targets) {
      CompletableFuture<ControlClient.Response> answer = px.control().postJson(b.config(), path, bytes, timeout);
      sent.put(b.id().name(), answer);
      // the router's view follows at once: the answer waits for the backend's models to be read again
      all.add(answer.handle((r, e) -> null).thenCompose(x -> px.discovery().refresh(b)));
    }
    boolean keepAlive = HttpUtil.isKeepAlive(req);
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).whenComplete((x, e) -> {
      ObjectNode results = JSON.createObjectNode();
      boolean allOk = true;
      for (Map.Entry<String, CompletableFuture<ControlClient.Response>> s : sent.entrySet()) {
        ObjectNode r = results.putObject(s.getKey());
        ControlClient.Response resp = s.getValue().isCompletedExceptionally() ? null : s.getValue().join();
        if (resp == null) {
          allOk = false;
          r.putNull("status");
          r.put("body", "no answer: " + s.getValue().handle((v, err) -> String.valueOf(err)).join());
        } else {
          allOk &= resp.ok();
          r.put("status", resp.status());
          r.put("body", new String(resp.body(), StandardCharsets.UTF_8));
        }
      }
      ObjectNode root = JSON.createObjectNode();
      root.put("lora_name", forward.get("lora_name").asText());
      root.put("action", load ? "load" : "unload");
      root.set("results", results);
      LOG.log(Level.INFO, "LoRA {0} of {1} through the admin API: {2}", load ? "load" : "unload",
          forward.get("lora_name").asText(), results);
      FullHttpResponse out = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
          allOk ? HttpResponseStatus.OK : HttpResponseStatus.BAD_GATEWAY,
          Unpooled.copiedBuffer(root.toString(), StandardCharsets.UTF_8));
      out.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json")
          .setInt(HttpHeaderNames.CONTENT_LENGTH, out.content().readableBytes());
      if (!keepAlive) {
        out.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      }
      var f = ctx.writeAndFlush(out);
      if (!keepAlive) {
        f.addListener(ChannelFutureListener.CLOSE);
      }
    });
    return null;
  }
}
