package dev.kvroute.engine.server;

import dev.kvroute.engine.model.EngineRequest;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * One generation request in flight: {@code n} choices per prompt, each an engine request, and the
 * response written as vLLM writes it.
 *
 * <p>Streaming ({@code vllm/entrypoints/openai/chat_completion/serving.py} and {@code
 * completion/serving.py}): headers at once ({@code text/event-stream}, chunked); then, for chat, a role
 * chunk {@code {"index":i,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}}
 * when choice {@code i} produces its first token; one event per token ({@code delta.content} for chat,
 * {@code text} for completions), the last carrying {@code finish_reason} and {@code stop_reason: null};
 * with {@code stream_options.include_usage}, a usage chunk with {@code "choices":[]}; then {@code
 * data: [DONE]}. With {@code continuous_usage_stats} every content event carries the running usage.
 * Non-streaming: one JSON body when every choice has finished. Usage counts each prompt once; {@code
 * prompt_tokens_details.cached_tokens} (the first choice's cached prompt tokens per prompt) only when
 * enabled.
 *
 * <p>Not thread-safe; runs on the engine's event loop.
 */
final class GenerationExchange implements EngineDriver.Sink {

  record Params(
      boolean chat,
      boolean stream,
      boolean includeUsage,
      boolean continuousUsage,
      boolean keepAlive,
      boolean http10,
      String responseId,
      String requestIdHeader,
      long created,
      String model,
      FaultPlan fault,
      boolean promptTokensDetails,
      String loraName) {}

  private static final class Choice {
    final int index;
    final int promptLen;
    final ReplyGenerator.Reply reply;
    int emitted;
    boolean finished;
    int cachedTokens;

    Choice(int index, int promptLen, ReplyGenerator.Reply reply) {
      this.index = index;
      this.promptLen = promptLen;
      this.reply = reply;
    }
  }

  private final MockEngineHandler handler;
  private final ChannelHandlerContext ctx;
  private final NettyMockEngine engine;
  private final Params p;
  private final List<int[]> prompts;
  private final int n;
  private final Choice[] choices;
  private final EngineRequest[] requests;
  private final long firstId;
  private final String chunkPrefix;
  private int finished;
  private int events;
  private boolean aborted;
  private boolean closed;
  private boolean stalled;
  private boolean dirty;
  private boolean completed;

  GenerationExchange(MockEngineHandler handler, ChannelHandlerContext ctx, NettyMockEngine engine,
      Params params, List<int[]> prompts, int n, int maxTokens, int minTokens, boolean ignoreEos, long seed) {
    this.handler = handler;
    this.ctx = ctx;
    this.engine = engine;
    this.p = params;
    this.prompts = prompts;
    this.n = n;
    int total = prompts.size() * n;
    this.choices = new Choice[total];
    this.requests = new EngineRequest[total];
    this.firstId = engine.driver.reserveIds(total);
    for (int pi = 0; pi < prompts.size(); pi++) {
      int[] prompt = prompts.get(pi);
      for (int i = 0; i < n; i++) {
        int k = pi * n + i;
        ReplyGenerator.Reply reply = engine.replies.generate(prompt, seed, i, maxTokens, minTokens, ignoreEos);
        choices[k] = new Choice(k, prompt.length, reply);
        requests[k] = new EngineRequest(firstId + k, prompt, reply.tokenIds(), reply.finishReason(), p.loraName());
      }
    }
    StringBuilder sb = new StringBuilder(160);
    sb.append("data: {\"id\":");
    Json.quote(sb, p.responseId());
    sb.append(",\"object\":").append(p.chat() ? "\"chat.completion.chunk\"" : "\"text_completion\"");
    sb.append(",\"created\":").append(p.created()).append(",\"model\":");
    Json.quote(sb, p.model());
    sb.append(",\"choices\":[");
    this.chunkPrefix = sb.toString();
  }

  void start() {
    if (p.stream()) {
      HttpResponse res = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
      Responses.serverHeaders(res.headers());
      res.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream; charset=utf-8");
      res.headers().set("x-request-id", p.requestIdHeader());
      if (!p.http10()) {
        // an HTTP/1.0 client cannot read chunks: as uvicorn (h11), the body then ends with the close
        HttpUtil.setTransferEncodingChunked(res, true);
      }
      if (!p.keepAlive()) {
        res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      }
      ctx.writeAndFlush(res);
    }
    engine.driver.submit(requests, this);
  }

  /** The client went away: abort every unfinished choice in the engine. */
  void cancel() {
    closed = true;
    abortUnfinished();
  }

  private void abortUnfinished() {
    for (Choice c : choices) {
      if (!c.finished) {
        engine.driver.abort(firstId + c.index);
      }
    }
  }

  @Override
  public void onFirstToken(long engineId, int cachedTokens) {
    Choice c = choices[(int) (engineId - firstId)];
    c.cachedTokens = cachedTokens;
    if (p.stream() && p.chat()) {
      writeEvent(chunkPrefix + "{\"index\":" + c.index
          + ",\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    }
  }

  @Override
  public void onToken(long engineId, int index) {
    Choice c = choices[(int) (engineId - firstId)];
    c.emitted = index + 1;
    if (!p.stream()) {
      return;
    }
    boolean last = index == c.reply.words().length - 1;
    String word = c.reply.words()[index];
    if (p.fault().split()) {
      word = word + "\u00e9";
    }
    StringBuilder sb = new StringBuilder(chunkPrefix.length() + 160);
    sb.append(chunkPrefix).append("{\"index\":").append(c.index);
    if (p.chat()) {
      sb.append(",\"delta\":{\"content\":");
      Json.quote(sb, word).append("},\"logprobs\":null,\"finish_reason\":");
      if (last) {
        Json.quote(sb, c.reply.finishReason()).append(",\"stop_reason\":null}]");
      } else {
        sb.append("null}]");
      }
    } else {
      sb.append(",\"text\":");
      Json.quote(sb, word).append(",\"logprobs\":null,\"finish_reason\":");
      if (last) {
        Json.quote(sb, c.reply.finishReason());
      } else {
        sb.append("null");
      }
      sb.append(",\"stop_reason\":null}]");
    }
    if (p.continuousUsage()) {
      sb.append(",\"usage\":{\"prompt_tokens\":").append(c.promptLen)
          .append(",\"total_tokens\":").append(c.promptLen + c.emitted)
          .append(",\"completion_tokens\":").append(c.emitted).append('}');
    }
    sb.append("}\n\n");
    writeEvent(sb);
  }

  @Override
  public void onFinished(long engineId, String reason) {
    Choice c = choices[(int) (engineId - firstId)];
    c.finished = true;
    finished++;
    if (EngineRequest.ABORT.equals(reason)) {
      aborted = true;
      return;
    }
    if (finished == choices.length && !aborted && !closed && !stalled) {
      complete();
    }
  }

  @Override
  public void flush() {
    dirty = false;
    if (!closed) {
      ctx.flush();
    }
  }

  private void complete() {
    if (completed) {
      return;
    }
    completed = true;
    if (p.stream()) {
      if (p.includeUsage()) {
        StringBuilder sb = new StringBuilder(chunkPrefix.length() + 160).append(chunkPrefix).append("],");
        usage(sb);
        writeEvent(sb.append("}\n\n").toString());
      }
      writeEvent("data: [DONE]\n\n");
      if (closed || stalled) {
        return;
      }
      if (p.keepAlive()) {
        ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
      } else {
        ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT).addListener(ChannelFutureListener.CLOSE);
      }
      dirty = false;
      handler.done();
      return;
    }
    byte[] body = fullBody().getBytes(StandardCharsets.UTF_8);
    int closeAfter = p.fault().closeAfterChunks();
    FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK,
        Unpooled.wrappedBuffer(body, 0, closeAfter >= 0 ? Math.min(closeAfter, body.length) : body.length));
    Responses.serverHeaders(res.headers());
    res.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
    res.headers().set("x-request-id", p.requestIdHeader());
    HttpUtil.setContentLength(res, body.length);
    if (closeAfter >= 0) {
      closed = true;
      ctx.writeAndFlush(res).addListener(ChannelFutureListener.CLOSE);
      return;
    }
    if (!p.keepAlive()) {
      res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
      ctx.writeAndFlush(res).addListener(ChannelFutureListener.CLOSE);
    } else {
      ctx.writeAndFlush(res);
    }
    handler.done();
  }

  private void usage(StringBuilder sb) {
    long promptTokens = 0;
    long completion = 0;
    long cached = 0;
    for (int pi = 0; pi < prompts.size(); pi++) {
      promptTokens += prompts.get(pi).length;
      cached += choices[pi * n].cachedTokens;
    }
    for (Choice c : choices) {
      completion += c.emitted;
    }
    sb.append("\"usage\":{\"prompt_tokens\":").append(promptTokens)
        .append(",\"total_tokens\":").append(promptTokens + completion)
        .append(",\"completion_tokens\":").append(completion);
    if (p.promptTokensDetails()) {
      sb.append(",\"prompt_tokens_details\":{\"cached_tokens\":").append(cached).append('}');
    } else if (!p.stream()) {
      sb.append(",\"prompt_tokens_details\":null");
    }
    sb.append('}');
  }

  private String fullBody() {
    StringBuilder sb = new StringBuilder(256);
    sb.append("{\"id\":");
    Json.quote(sb, p.responseId());
    sb.append(",\"object\":").append(p.chat() ? "\"chat.completion\"" : "\"text_completion\"");
    sb.append(",\"created\":").append(p.created()).append(",\"model\":");
    Json.quote(sb, p.model());
    sb.append(",\"choices\":[");
    for (int k = 0; k < choices.length; k++) {
      Choice c = choices[k];
      if (k > 0) {
        sb.append(',');
      }
      String text = String.join("", c.reply.words());
      sb.append("{\"index\":").append(c.index);
      if (p.chat()) {
        sb.append(",\"message\":{\"role\":\"assistant\",\"content\":");
        Json.quote(sb, text);
        sb.append(",\"refusal\":null,\"annotations\":null,\"audio\":null,\"function_call\":null,"
            + "\"tool_calls\":[],\"reasoning_content\":null},\"logprobs\":null,\"finish_reason\":");
        Json.quote(sb, c.reply.finishReason()).append(",\"stop_reason\":null}");
      } else {
        sb.append(",\"text\":");
        Json.quote(sb, text);
        sb.append(",\"logprobs\":null,\"finish_reason\":");
        Json.quote(sb, c.reply.finishReason()).append(",\"stop_reason\":null,\"prompt_logprobs\":null}");
      }
    }
    sb.append("],");
    if (p.chat()) {
      sb.append("\"service_tier\":null,\"system_fingerprint\":null,");
    }
    usage(sb);
    if (p.chat()) {
      sb.append(",\"prompt_logprobs\":null");
    }
    sb.append(",\"kv_transfer_params\":null}");
    return sb.toString();
  }

  /** Writes one SSE event, applying the split, close-after and stall-after faults. */
  private void writeEvent(CharSequence event) {
    if (closed || stalled) {
      return;
    }
    if (p.fault().split()) {
      writeSplit(event.toString().getBytes(StandardCharsets.UTF_8));
    } else {
      ByteBuf buf = ByteBufUtil.writeUtf8(ctx.alloc(), event);
      ctx.write(new DefaultHttpContent(buf));
      if (!dirty) {
        dirty = true;
        engine.driver.markDirty(this);
      }
    }
    events++;
    FaultPlan f = p.fault();
    if (f.closeAfterChunks() >= 0 && events >= f.closeAfterChunks()) {
      closed = true;
      ctx.flush();
      ctx.close();
      abortUnfinished();
    } else if (f.stallAfterChunks() >= 0 && events >= f.stallAfterChunks()) {
      stalled = true;
      ctx.flush();
      abortUnfinished();
    }
  }

  /**
   * Writes {@code bytes} as several flushed HTTP chunks, cut after the first byte, inside the first
   * multi-byte UTF-8 character, and between the final two newlines.
   */
  private void writeSplit(byte[] bytes) {
    int[] cuts = new int[5];
    int k = 0;
    cuts[k++] = 0;
    if (bytes.length > 1) {
      cuts[k++] = 1;
    }
    for (int i = 1; i < bytes.length; i++) {
      if ((bytes[i] & 0xC0) == 0xC0) {
        if (i + 1 > cuts[k - 1] && i + 1 < bytes.length) {
          cuts[k++] = i + 1;
        }
        break;
      }
    }
    if (bytes.length - 1 > cuts[k - 1]) {
      cuts[k++] = bytes.length - 1;
    }
    cuts[k++] = bytes.length;
    for (int i = 0; i + 1 < k; i++) {
      ByteBuf piece = ctx.alloc().buffer(cuts[i + 1] - cuts[i]);
      piece.writeBytes(bytes, cuts[i], cuts[i + 1] - cuts[i]);
      ctx.writeAndFlush(new DefaultHttpContent(piece));
    }
  }
}
