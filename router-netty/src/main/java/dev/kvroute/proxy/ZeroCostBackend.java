package dev.kvroute.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.nio.charset.StandardCharsets;

/**
 * Answers like a vLLM server at zero cost: {@code /health}, {@code /v1/models} (one model,
 * {@value SelfWarmUp#MODEL}), a {@code /metrics} of an idle or a busy engine, and every other request a completion
 * with usage (counts of 1 to 5 digits), as JSON or (when the body asks to stream) as SSE: {@value
 * #STREAMED_CHUNKS} content chunks, each flushed on its own, then a usage chunk and {@code [DONE]};
 * its headers spelled as {@code style} says. The backends {@link SelfWarmUp} starts in front of its
 * throwaway proxy. Not thread-safe: one per connection.
 */
final class ZeroCostBackend extends SimpleChannelInboundHandler<FullHttpRequest> {
  /** Content chunks of a streamed reply before its usage chunk, each flushed on its own as an engine's tokens. */
  static final int STREAMED_CHUNKS = 8;
  private final ReplyStyle style;
  private final boolean busy;
  /** Completions answered on this connection; every {@value SelfWarmUp#REQUESTS_PER_CONNECTION}th closes it. */
  private int answered;

  /** {@code busy}: its {@code /metrics} reports a waiting request (KV cache 1% used), else an idle engine. */
  ZeroCostBackend(ReplyStyle style, boolean busy) {
    this.style = style;
    this.busy = busy;
  }

  private static final byte[] MODELS = ("{\"object\":\"list\",\"data\":[{\"id\":\"" + SelfWarmUp.MODEL
      + "\",\"object\":\"model\",\"owned_by\":\"vllm\",\"max_model_len\":131072}]}").getBytes(StandardCharsets.UTF_8);
  /** An idle engine's load, so that load scraping reads it (and logs no warning about it). */
  private static final byte[] METRICS = metrics(0, 0, 0.0);
  /**
   * A busy engine's, not saturated (requests waiting, the KV cache nearly empty): admission's and
   * the policies' branches for a waiting queue run in the warm-up, not first under real load.
   */
  private static final byte[] BUSY_METRICS = metrics(3, 1, 0.01);

  private static byte[] metrics(int running, int waiting, double kvUsage) {
    String labels = "{model_name=\"" + SelfWarmUp.MODEL + "\"} ";
    return ("vllm:num_requests_running" + labels + running + ".0\n"
        + "vllm:num_requests_waiting" + labels + waiting + ".0\n"
        + "vllm:kv_cache_usage_perc" + labels + kvUsage + "\n").getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Completions with usage counts of 1 to 5 digits, as real replies' vary; most without {@code
   * prompt_tokens_details} (vLLM's default), one with a cache hit as large as the prompt (vLLM with
   * {@code --enable-prompt-tokens-details}). Never {@code cached_tokens: 0} on a long prompt: the
   * index's usage correction would then empty the backend's view after every reply, a path real
   * traffic hardly takes.
   */
  private static final byte[][] COMPLETIONS = {completion(5000, 1, -1), completion(23817, 16, 23808),
      completion(812, 256, -1), completion(14, 1024, -1)};
  private static final byte[] CHUNK = ("data: {\"id\":\"chatcmpl-0\",\"object\":\"chat.completion.chunk\",\"created\":1,"
      + "\"model\":\"" + SelfWarmUp.MODEL + "\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":null}]}\n\n")
      .getBytes(StandardCharsets.UTF_8);
  private static final byte[] USAGE = ("data: {\"id\":\"chatcmpl-0\",\"object\":\"chat.completion.chunk\",\"created\":1,"
      + "\"model\":\"" + SelfWarmUp.MODEL + "\",\"choices\":[],\"usage\":{\"prompt_tokens\":5000,\"completion_tokens\":8,"
      + "\"total_tokens\":5008}}\n\ndata: [DONE]\n\n")
      .getBytes(StandardCharsets.UTF_8);

  /** A completion's JSON; {@code cached < 0}: no {@code prompt_tokens_details}. */
  private static byte[] completion(int prompt, int completion, int cached) {
    return ("{\"id\":\"chatcmpl-0\",\"object\":\"chat.completion\",\"created\":1,"
        + "\"model\":\"" + SelfWarmUp.MODEL + "\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"ok\"},"
        + "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":" + prompt + ",\"completion_tokens\":" + completion
        + ",\"total_tokens\":" + (prompt + completion)
        + (cached < 0 ? "" : ",\"prompt_tokens_details\":{\"cached_tokens\":" + cached + "}") + "}}")
        .getBytes(StandardCharsets.UTF_8);
  }

  @Override
  protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
    String path = req.uri();
    if (path.startsWith("/v1/models")) {
      full(ctx, "application/json", MODELS);
    } else if (path.startsWith("/metrics")) {
      full(ctx, "text/plain; version=0.0.4", busy ? BUSY_METRICS : METRICS);
    } else if (path.startsWith("/health")) {
      full(ctx, "text/plain", new byte[0]);
    } else if (path.startsWith("/tokenize")) {
      full(ctx, "application/json", tokens(req)); // --tokenizer engine warms up too
    } else if (streams(req.content())) {
      HttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
      style.head(head.headers(), "text/event-stream; charset=utf-8", -1);
      ctx.write(head);
      for (int i = 0; i < STREAMED_CHUNKS; i++) {
        ctx.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(CHUNK)));
      }
      ctx.writeAndFlush(new io.netty.handler.codec.http.DefaultLastHttpContent(Unpooled.wrappedBuffer(USAGE)));
    } else {
      byte[] completion = COMPLETIONS[answered % COMPLETIONS.length];
      ByteBuf content = Unpooled.wrappedBuffer(completion);
      FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, content);
      style.head(r.headers(), "application/json", completion.length);
      if (++answered % SelfWarmUp.REQUESTS_PER_CONNECTION == 0) {
        // the proxy then opens a new upstream connection, as after an engine's keep-alive limit
        r.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        ctx.writeAndFlush(r).addListener(ChannelFutureListener.CLOSE);
      } else {
        ctx.writeAndFlush(r);
      }
    }
  }

  /** Whether a chat body asks to stream, compact or spaced ({@code "stream":true}, {@code "stream": true}). */
  private static boolean streams(ByteBuf body) {
    String s = body.toString(StandardCharsets.UTF_8);
    return s.contains("\"stream\":true") || s.contains("\"stream\": true");
  }

  @Override
  public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
    ctx.close(); // the proxy reset the connection (it closes its pool at the end): nothing to report
  }

  /** A {@code /tokenize} answer: one made-up token per 4 bytes of the body, the same for the same bytes. */
  private static byte[] tokens(FullHttpRequest req) {
    ByteBuf body = req.content();
    StringBuilder sb = new StringBuilder("{\"count\":0,\"max_model_len\":131072,\"tokens\":[");
    for (int i = body.readerIndex(); i + 4 <= body.writerIndex(); i += 4) {
      sb.append(i == body.readerIndex() ? "" : ",").append(body.getInt(i) & 0xffff);
    }
    if (body.readableBytes() < 4) {
      sb.append('0');
    }
    return sb.append("]}").toString().getBytes(StandardCharsets.UTF_8);
  }

  private void full(ChannelHandlerContext ctx, String type, byte[] body) {
    ByteBuf content = Unpooled.wrappedBuffer(body);
    FullHttpResponse r = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, content);
    style.head(r.headers(), type, body.length);
    ctx.writeAndFlush(r);
  }

  /** How a backend spells its reply headers (case-insensitive in HTTP, other branches in the proxy). */
  enum ReplyStyle {
    /** vLLM's and SGLang's server (uvicorn, h11): lower case, {@code date} and {@code server} first. */
    UVICORN {
      @Override
      void head(HttpHeaders h, String type, int length) {
        h.set("date", DATE).set("server", "uvicorn");
        if (length >= 0) {
          h.setInt("content-length", length);
        } else {
          h.set("transfer-encoding", "chunked");
        }
        h.set("content-type", type);
      }
    },
    /** nginx, Envoy and most proxies in front of engines: capitalized, with {@code Connection}. */
    NGINX {
      @Override
      void head(HttpHeaders h, String type, int length) {
        h.set("Server", "nginx").set("Date", DATE).set("Content-Type", type);
        if (length >= 0) {
          h.setInt("Content-Length", length);
        } else {
          h.set("Transfer-Encoding", "chunked");
        }
        h.set("Connection", "keep-alive");
      }
    };

    private static final String DATE = "Wed, 02 Dec 2026 07:00:00 GMT";

    /** The reply's headers: {@code length < 0} for a chunked (streamed) reply. */
    abstract void head(HttpHeaders h, String type, int length);
  }
}
