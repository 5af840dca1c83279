package dev.kvroute.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

final class TransportTest {
  private static final List<String> ORDER = List.of(Transport.IO_URING, Transport.EPOLL, Transport.NIO);

  @Test
  void withoutThePropertyTheFirstAvailableOfIoUringEpollAndNioIsTaken() {
    String expected = ORDER.stream().filter(n -> Transport.unavailability(n) == null).findFirst().orElseThrow();
    assertThat(Transport.choose(null).name()).isEqualTo(expected);
  }

  @ParameterizedTest
  @ValueSource(strings = {Transport.IO_URING, Transport.EPOLL, Transport.NIO})
  void theTransportAskedForIsUsedWhereAvailableElseTheNextOne(String wanted) {
    String expected = ORDER.subList(ORDER.indexOf(wanted), ORDER.size()).stream()
        .filter(n -> Transport.unavailability(n) == null).findFirst().orElseThrow();
    assertThat(Transport.choose(wanted).name()).isEqualTo(expected);
    assertThat(Transport.choose(" " + wanted.toUpperCase() + " ").name()).isEqualTo(expected);
  }

  @Test
  void anUnknownTransportIsRefusedWithTheChoices() {
    assertThatThrownBy(() -> Transport.choose("kqueue"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("kvroute.transport=kqueue (expected: io_uring, epoll, nio)");
  }

  @Test
  void aConnectFailureReadsTheSameOnEveryTransport() {
    Duration timeout = Duration.ofMillis(3000);
    assertThat(Transport.connectFailure(
        new ConnectException("io_uring connect(..) failed with error(-111): Connection refused"), timeout))
        .isEqualTo("connection refused");
    assertThat(Transport.connectFailure(new ConnectException(
        "finishConnect(..) failed with error(-111): Connection refused: /127.0.0.1:19599"), timeout))
        .isEqualTo("connection refused");
    assertThat(Transport.connectFailure(new ConnectException("connect(..) failed: No route to host: "
        + "engine-0.vllm/10.0.0.5:8000"), timeout)).isEqualTo("no route to host");
    assertThat(Transport.connectFailure(new ConnectException("Connection refused: /127.0.0.1:19599"), timeout))
        .isEqualTo("connection refused");
    assertThat(Transport.connectFailure(
        new ConnectTimeoutException("connection timed out: /127.0.0.1:19599"), timeout))
        .isEqualTo("connection timed out after 3000 ms");
    assertThat(Transport.connectFailure(new ConnectException(), timeout)).isEqualTo("ConnectException");
    assertThat(Transport.connectFailure(new java.io.IOException("TLS: EOF"), timeout)).isEqualTo("TLS: EOF");
  }

  @Test
  void aResponseFailureNamesTheReasonNotTheExceptionClass() {
    // what the break test saw in client-facing 502 bodies
    assertThat(Transport.failure(new java.io.IOException("io_uring read(..) failed with error(-104): Connection reset "
        + "by peer"))).isEqualTo("connection reset by peer");
    assertThat(Transport.failure(new NumberFormatException("Invalid character in chunk size")))
        .isEqualTo("invalid character in chunk size");
    assertThat(Transport.failure(new io.netty.handler.codec.http.TooLongHttpHeaderException(
        "HTTP header is larger than 8192 bytes."))).isEqualTo("HTTP header is larger than 8192 bytes.");
    assertThat(Transport.failure(new IllegalStateException())).isEqualTo("IllegalStateException");
  }

  /** Each transport this machine has carries bytes both ways between its server and client channels. */
  @ParameterizedTest
  @ValueSource(strings = {Transport.IO_URING, Transport.EPOLL, Transport.NIO})
  void eachAvailableTransportServesAConnection(String name) throws Exception {
    assumeThat(Transport.unavailability(name)).as(name + " on this machine").isNull();
    Transport t = Transport.choose(name);
    assertThat(t.name()).isEqualTo(name);
    MultiThreadIoEventLoopGroup group = t.group(1);
    try {
      Channel server = new ServerBootstrap().group(group).channel(t.serverChannel())
          .childHandler(new ChannelInitializer<SocketChannel>() {
            @Override
            protected void initChannel(SocketChannel ch) {
              ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                  ctx.writeAndFlush(msg); // echo
                }
              });
            }
          })
          .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
      CompletableFuture<String> echoed = new CompletableFuture<>();
      StringBuilder got = new StringBuilder();
      Channel client = new Bootstrap().group(group).channel(t.channel())
          .handler(new SimpleChannelInboundHandler<ByteBuf>() {
            @Override
            protected void channelRead0(ChannelHandlerContext ctx, ByteBuf in) {
              got.append(in.toString(StandardCharsets.US_ASCII));
              if (got.length() >= 10) {
                echoed.complete(got.toString());
              }
            }
          })
          .connect(server.localAddress()).sync().channel();
      client.writeAndFlush(Unpooled.copiedBuffer("ping ", StandardCharsets.US_ASCII));
      client.writeAndFlush(Unpooled.copiedBuffer("pong.", StandardCharsets.US_ASCII));
      assertThat(echoed.get(10, TimeUnit.SECONDS)).isEqualTo("ping pong.");
      client.close().sync();
      server.close().sync();
    } finally {
      group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }
  }
}
