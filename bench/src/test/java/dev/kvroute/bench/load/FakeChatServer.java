package dev.kvroute.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A stand-in for a router in front of vLLM engines, for the load driver's tests: answers
 * {@code /v1/models} and streams chat completions in vLLM's framing (role chunk, one content chunk per
 * token, usage chunk with {@code cached_tokens}, {@code [DONE]}), splitting every event across two
 * writes. The first token comes {@code ttftMillis} after the request; {@code prompt_tokens} is the
 * number of characters of the messages' contents and {@code cached_tokens} half of it.
 */
final class FakeChatServer implements AutoCloseable {
  private static final ObjectMapper JSON = new ObjectMapper();

  final List<JsonNode> requests = new CopyOnWriteArrayList<>();
  final List<String> sessionHeaders = new CopyOnWriteArrayList<>();
  private final EventLoopGroup group = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
  private final Channel server;
  private final long ttftMillis;
  volatile int failStatus;

  FakeChatServer(long ttftMillis) throws InterruptedException {
    this.ttftMillis = ttftMillis;
    server =
        new ServerBootstrap()
            .group(group)
            .channel(NioServerSocketChannel.class)
            .childHandler(
                new ChannelInitializer<SocketChannel>() {
                  @Override
                  protected void initChannel(SocketChannel ch) {
                    ch.pipeline()
                        .addLast(new HttpServerCodec())
                        .addLast(new HttpObjectAggregator(16 << 20))
                        .addLast(new Handler());
                  }
                })
            .bind("127.0.0.1", 0)
            .sync()
            .channel();
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + ((InetSocketAddress) server.localAddress()).getPort());
  }

  @Override
  public void close() {
    server.close().syncUninterruptibly();
    group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
  }

  private final class Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) throws Exception {
      if (req.uri().equals("/v1/models")) {
        byte[] body = "{\"object\":\"list\",\"data\":[{\"id\":\"fake-model\",\"object\":\"model\"}]}".getBytes(StandardCharsets.UTF_8);
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK, Unpooled.wrappedBuffer(body));
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json").setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        ctx.writeAndFlush(res);
        return;
      }
      if (failStatus != 0) {
        byte[] body = "{\"error\":{\"message\":\"nope\",\"type\":\"X\",\"param\":null,\"code\":503}}".getBytes(StandardCharsets.UTF_8);
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(failStatus), Unpooled.wrappedBuffer(body));
        res.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, body.length);
        ctx.writeAndFlush(res);
        return;
      }
      JsonNode n = JSON.readTree(req.content().toString(StandardCharsets.UTF_8));
      requests.add(n);
      sessionHeaders.add(req.headers().get("x-session-id"));
      int chars = 0;
      for (JsonNode m : n.get("messages")) {
        chars += m.get("content").asText().length();
      }
      int maxTokens = n.get("max_tokens").asInt();
      HttpResponse res = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
      res.headers()
          .set(HttpHeaderNames.CONTENT_TYPE, "text/event-stream")
          .set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED)
          .set("x-kvroute-backend", "fake-0");
      ctx.writeAndFlush(res);
      event(ctx, "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]}");
      int prompt = chars;
      ctx.executor().schedule(() -> {
        for (int i = 0; i < maxTokens; i++) {
          String fin = i == maxTokens - 1 ? "\"length\"" : "null";
          event(ctx, "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t" + i + "\"},\"logprobs\":null,\"finish_reason\":" + fin + "}]}");
        }
        event(ctx, "{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":" + prompt
            + ",\"total_tokens\":" + (prompt + maxTokens) + ",\"completion_tokens\":" + maxTokens
            + ",\"prompt_tokens_details\":{\"cached_tokens\":" + prompt / 2 + "}}}");
        event(ctx, "[DONE]");
        ctx.writeAndFlush(LastHttpContent.EMPTY_LAST_CONTENT);
      }, ttftMillis, TimeUnit.MILLISECONDS);
    }

    private void event(ChannelHandlerContext ctx, String data) {
      byte[] bytes = ("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8);
      int half = bytes.length / 2;
      ctx.write(new DefaultHttpContent(Unpooled.wrappedBuffer(bytes, 0, half)));
      ctx.writeAndFlush(new DefaultHttpContent(Unpooled.wrappedBuffer(bytes, half, bytes.length - half)));
    }
  }
}
