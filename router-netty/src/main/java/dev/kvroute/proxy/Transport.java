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
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * The socket transport of the proxy's event loops, client and backend sides alike. On Linux the
 * default is Netty's io_uring transport when the kernel lets this process set up a ring: reads,
 * writes and accepts are submitted to and completed from two rings shared with the kernel, instead
 * of epoll's readiness notification followed by one system call per read or write, which takes
 * about a tenth to a fifth off the router's CPU per request ({@code docs/performance.md}, "The
 * io_uring transport"). When it is not available (a kernel before 5.14, {@code
 * /proc/sys/kernel/io_uring_disabled}, or a container whose seccomp profile refuses {@code
 * io_uring_setup}, as Docker's and Kubernetes' {@code RuntimeDefault} profiles do), native epoll,
 * else NIO (not Linux).
 *
 * <p>The system property {@code kvroute.transport} ({@value #IO_URING}, {@value #EPOLL} or {@value
 * #NIO}) asks for one: an unavailable one falls back along the same order with a warning that
 * gives the kernel's reason; any other value is refused with {@link IllegalArgumentException}. The
 * server's start line names the transport in use.
 *
 * <p>Immutable and thread-safe ({@link #best()} is synchronized).
 */
record Transport(
    String name,
    IoHandlerFactory ioHandlerFactory,
    Class<? extends ServerSocketChannel> serverChannel,
    Class<? extends SocketChannel> channel) {
  /** The property that asks for a transport. */
  static final String PROPERTY = "kvroute.transport";
  static final String IO_URING = "io_uring";
  static final String EPOLL = "epoll";
  static final String NIO = "nio";
  private static final List<String> ORDER = List.of(IO_URING, EPOLL, NIO);
  private static final System.Logger LOG = System.getLogger(Transport.class.getName());

  /** The value of {@link #PROPERTY} the last choice was made for, and the transport it chose. */
  private static String chosenFor;
  private static String chosen;

  /**
   * The transport {@link #PROPERTY} asks for, else the first available of io_uring, epoll, NIO; the
   * choice is kept while the property keeps its value (so its warning, if any, is logged once for
   * the warm-up's proxies and the server).
   */
  static synchronized Transport best() {
    String wanted = System.getProperty(PROPERTY);
    if (chosen == null || !Objects.equals(wanted, chosenFor)) {
      chosen = choose(wanted).name();
      chosenFor = wanted;
    }
    return of(chosen);
  }

  /**
   * The first available transport from {@code wanted} on in the order io_uring, epoll, NIO ({@code
   * null}: from io_uring). Warns when {@code wanted} is not available.
   *
   * @throws IllegalArgumentException if {@code wanted} is none of {@value #IO_URING}, {@value
   *     #EPOLL} and {@value #NIO}
   */
  static Transport choose(String wanted) {
    String first = wanted == null ? IO_URING : wanted.trim().toLowerCase(Locale.ROOT);
    int from = ORDER.indexOf(first);
    if (from < 0) {
      throw new IllegalArgumentException(PROPERTY + "=" + wanted + " (expected: " + String.join(", ", ORDER) + ")");
    }
    for (String name : ORDER.subList(from, ORDER.size())) {
      Throwable unavailable = unavailability(name);
      if (unavailable == null) {
        return of(name);
      }
      if (wanted != null && name.equals(first)) {
        LOG.log(Level.WARNING, PROPERTY + "=" + wanted + " is not available here (" + unavailable
            + "); using the next transport");
      }
    }
    throw new AssertionError("NIO is always available");
  }

  /** Why transport {@code name} cannot be used here, or {@code null} when it can. */
  static Throwable unavailability(String name) {
    return switch (name) {
      case IO_URING -> IoUring.isAvailable() ? null : IoUring.unavailabilityCause();
      case EPOLL -> Epoll.isAvailable() ? null : Epoll.unavailabilityCause();
      case NIO -> null;
      default -> throw new IllegalArgumentException(name);
    };
  }

  private static Transport of(String name) {
    return switch (name) {
      case IO_URING -> new Transport(IO_URING, IoUringIoHandler.newFactory(), IoUringServerSocketChannel.class,
          IoUringSocketChannel.class);
      case EPOLL -> new Transport(EPOLL, EpollIoHandler.newFactory(), EpollServerSocketChannel.class,
          EpollSocketChannel.class);
      default -> new Transport(NIO, NioIoHandler.newFactory(), NioServerSocketChannel.class, NioSocketChannel.class);
    };
  }

  /** A new event loop group of {@code threads} ({@code 0}: Netty's default, 2 × cores). */
  MultiThreadIoEventLoopGroup group(int threads) {
    return new MultiThreadIoEventLoopGroup(threads, ioHandlerFactory);
  }
}
