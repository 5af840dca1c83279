package dev.kvroute.proxy;

import dev.kvroute.proxy.config.LimitConfig;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpServerCodec;

/**
 * Builds a client connection's pipeline, one named step per concern:
 *
 * <pre>
 *   "codec"      HttpServerCodec     HTTP/1.1 framing; header and request-line limits
 *   "aggregator" RequestAggregator   body limit (413), 100-continue, 431/414/400/417 rejections
 *   "proxy"      ProxyHandler        routing, exchanges, local endpoints
 * </pre>
 *
 * <p>Auto-read is off. There is no {@code FlowControlHandler}: {@link ProxyHandler} queues requests
 * that arrive while one is in progress and asks for no further read until they are served.
 *
 * <p>Thread-safe (stateless; shared by every connection).
 */
final class ProxyInitializer extends ChannelInitializer<SocketChannel> {
  static final String CODEC = "codec";
  static final String AGGREGATOR = "aggregator";
  static final String PROXY = "proxy";

  private final ProxyContext px;

  ProxyInitializer(ProxyContext px) {
    this.px = px;
  }

  @Override
  protected void initChannel(SocketChannel ch) {
    px.clients().add(ch);
    ChannelPipeline p = ch.pipeline();
    addHttpCodec(p);
    addAggregator(p);
    addProxy(p);
  }

  private void addHttpCodec(ChannelPipeline p) {
    LimitConfig limits = px.config().limits();
    p.addLast(CODEC, new HttpServerCodec(new HttpDecoderConfig()
        .setMaxInitialLineLength(limits.maxInitialLineBytes())
        .setMaxHeaderSize(limits.maxHeaderBytes())
        .setMaxChunkSize(64 << 10)));
  }

  private void addAggregator(ChannelPipeline p) {
    p.addLast(AGGREGATOR, new RequestAggregator(px.config().limits().maxBodyBytes()));
  }

  private void addProxy(ChannelPipeline p) {
    p.addLast(PROXY, new ProxyHandler(px));
  }
}
