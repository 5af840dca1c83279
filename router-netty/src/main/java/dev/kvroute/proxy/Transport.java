package dev.kvroute.proxy;

import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

/**
 * The socket transport: native epoll on Linux when available, else NIO. Setting the system property
 * {@code kvroute.transport=nio} forces NIO.
 *
 * <p>Immutable and thread-safe.
 */
record Transport(
    String name,
    IoHandlerFactory ioHandlerFactory,
    Class<? extends ServerSocketChannel> serverChannel,
    Class<? extends SocketChannel> channel) {

  static Transport best() {
    if (!"nio".equals(System.getProperty("kvroute.transport")) && Epoll.isAvailable()) {
      return new Transport("epoll", EpollIoHandler.newFactory(), EpollServerSocketChannel.class, EpollSocketChannel.class);
    }
    return new Transport("nio", NioIoHandler.newFactory(), NioServerSocketChannel.class, NioSocketChannel.class);
  }

  /** A new event loop group of {@code threads} ({@code 0}: Netty's default, 2 × cores). */
  MultiThreadIoEventLoopGroup group(int threads) {
    return new MultiThreadIoEventLoopGroup(threads, ioHandlerFactory);
  }
}
