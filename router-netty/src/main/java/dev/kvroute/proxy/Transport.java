package dev.kvroute.proxy;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ConnectTimeoutException;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
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
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;

/**
 * The socket transport of the proxy's event loops, client and backend sides alike. On Linux the
 * default is Netty's io_uring transport when the kernel lets this process run an event loop on a
 * ring: reads, writes and accepts are submitted to and completed from two rings shared with the
 * kernel, instead of epoll's readiness notification followed by one system call per read or write,
 * which takes about 15% off the router's CPU per request (median of alternated pairs, {@code
 * docs/performance.md}, "The io_uring transport"). When it is not available (a kernel before 5.14,
 * {@code /proc/sys/kernel/io_uring_disabled}, or a container whose seccomp profile refuses {@code
 * io_uring_*}, as upstream Docker's default and containerd's {@code RuntimeDefault} do), native
 * epoll, else NIO (not Linux).
 *
 * <p>A Netty 4.2.18 event loop can end its shutdown without closing its channels (4.2.21 closes
 * them); on io_uring a connection left to that shutdown loses its in-flight read's buffer, which
 * CI's paranoid leak detection once caught. {@code KvrouteServer.close()} therefore closes every
 * connection before the loops stop ({@code docs/operations.md}, "Socket transport").
 *
 * <p>The system property {@code kvroute.transport} ({@value #IO_URING}, {@value #EPOLL} or {@value
 * #NIO}) asks for one: an unavailable one falls back along the order io_uring, epoll, NIO with a
 * warning that gives the kernel's reason (a kernel before 5.14, {@code
 * /proc/sys/kernel/io_uring_disabled}, a seccomp profile that refuses {@code io_uring_*}, as
 * upstream Docker's default and containerd's {@code RuntimeDefault} do); any other value is
 * refused with {@link IllegalArgumentException}. Case and surrounding spaces are ignored. The
 * server's start line names the transport in use.
 *
 * <p>Public for the benchmark's Netty relay ({@code dev.kvroute.bench.relay.NettyRelay}), which must run
 * on the transport the router runs on to be its floor.
 *
 * <p>Immutable and thread-safe ({@link #best()} is synchronized).
 */
public record Transport(
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
  /** The longest the io_uring probe waits for its bind, then for its connect. */
  private static final int PROBE_SECONDS = 2;
  /** The address Netty appends to a connect failure: {@code ": /10.0.0.5:8000"}, {@code ": host/10.0.0.5:8000"}. */
  private static final Pattern ADDRESS = Pattern.compile(": \\S*/\\S+$");
  /** The native call Netty's epoll and io_uring put first: {@code "io_uring connect(..) failed with error(-111): "}. */
  private static final Pattern NATIVE_CALL = Pattern.compile("^.*?\\(\\.\\.\\) failed(?: with error\\(-?\\d+\\))?: ");

  /** The value of {@link #PROPERTY} the last choice was made for, and the transport it chose. */
  private static String chosenFor;
  private static String chosen;

  /**
   * The transport {@link #PROPERTY} asks for, else the first available of io_uring, epoll, NIO; the
   * choice is kept while the property keeps its value (so its warning, if any, is logged once for
   * the warm-up's proxies and the server).
   */
  public static synchronized Transport best() {
    String wanted = System.getProperty(PROPERTY);
    if (chosen == null || !Objects.equals(wanted, chosenFor)) {
      chosen = choose(wanted).name();
      chosenFor = wanted;
    }
    return of(chosen);
  }

  /**
   * The first available transport from {@code wanted} on in the order io_uring, epoll, NIO ({@code
   * null}: from io_uring). Warns when {@code wanted} is not available, and when, unasked, a ring can
   * be set up but an event loop cannot run on it.
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
      } else if (name.equals(IO_URING) && IoUring.isAvailable()) {
        // a ring can be set up but an event loop cannot run on it: say why Netty just logged errors
        LOG.log(Level.WARNING, "io_uring is only partly available here (" + unavailable + "); using the next transport");
      }
    }
    throw new AssertionError("NIO is always available");
  }

  /** Why transport {@code name} cannot be used here, or {@code null} when it can. */
  static Throwable unavailability(String name) {
    return switch (name) {
      case IO_URING -> IoUring.isAvailable() ? UringProbe.FAILURE : IoUring.unavailabilityCause();
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

  /**
   * What to tell a client about a failed connection to a backend, the same on every transport:
   * {@code connection refused}, {@code connection timed out after 3000 ms}. Netty's transports word
   * the same failure differently ({@code io_uring connect(..) failed with error(-111): Connection
   * refused}, {@code finishConnect(..) failed with error(-111): Connection refused: /10.0.0.5:8000},
   * {@code Connection refused: /10.0.0.5:8000}); this keeps the operating system's reason and drops
   * the native call, the error number and the address (the caller names the backend).
   *
   * @param connectTimeout the configured connect timeout, named for a timeout
   */
  static String connectFailure(Throwable cause, Duration connectTimeout) {
    if (cause instanceof ConnectTimeoutException) {
      return "connection timed out after " + connectTimeout.toMillis() + " ms";
    }
    return failure(cause);
  }

  /**
   * What to tell a client about {@code cause}, an error on a backend connection or in its response:
   * its reason as {@link #connectFailure} words it ({@code connection reset by peer}, {@code invalid
   * character in chunk size}), without the exception's class, the native call or the address; the
   * class's simple name when it gives no reason.
   */
  static String failure(Throwable cause) {
    String m = cause.getMessage();
    if (m == null || m.isBlank()) {
      return cause.getClass().getSimpleName();
    }
    m = NATIVE_CALL.matcher(ADDRESS.matcher(m).replaceFirst("")).replaceFirst("");
    if (m.length() > 1 && Character.isUpperCase(m.charAt(0)) && Character.isLowerCase(m.charAt(1))) {
      m = Character.toLowerCase(m.charAt(0)) + m.substring(1);
    }
    return m;
  }

  /**
   * Whether an io_uring event loop works here, beyond {@link IoUring#isAvailable()} (which only sets
   * up a ring): a policy may allow {@code io_uring_setup} but refuse {@code io_uring_enter}, and then
   * every event loop thread dies at its first wait and the server never listens. One loopback
   * connection through a one-thread io_uring group, at most {@value #PROBE_SECONDS} s, once per JVM.
   */
  private static final class UringProbe {
    static final Throwable FAILURE = probe();

    private static Throwable probe() {
      MultiThreadIoEventLoopGroup group = new MultiThreadIoEventLoopGroup(1, IoUringIoHandler.newFactory());
      Channel server = null;
      Channel client = null;
      java.util.concurrent.CompletableFuture<Channel> accepted = new java.util.concurrent.CompletableFuture<>();
      try {
        ChannelFuture bound = new ServerBootstrap().group(group).channel(IoUringServerSocketChannel.class)
            .childHandler(new ChannelInboundHandlerAdapter() {
              @Override
              public void handlerAdded(io.netty.channel.ChannelHandlerContext ctx) {
                accepted.complete(ctx.channel());
              }
            })
            .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        Throwable failed = failure(bound);
        if (failed != null) {
          return failed;
        }
        server = bound.channel();
        ChannelFuture connected = new Bootstrap().group(group).channel(IoUringSocketChannel.class)
            .handler(new ChannelInboundHandlerAdapter())
            .connect(server.localAddress());
        client = connected.channel();
        return failure(connected);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return e;
      } catch (RuntimeException e) {
        return e;
      } finally {
        // every channel closed, and the close awaited, before the group shuts down: see
        // KvrouteServer.close() (an io_uring read left in flight at the loop's end leaks its buffer)
        Channel child = client == null ? null : awaitAccepted(accepted);
        for (Channel ch : new Channel[] {client, child, server}) {
          if (ch != null) {
            ch.close().awaitUninterruptibly(PROBE_SECONDS, TimeUnit.SECONDS);
          }
        }
        group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
      }
    }

    /** The probe's accepted connection, or {@code null} if none came within {@value #PROBE_SECONDS} s. */
    private static Channel awaitAccepted(java.util.concurrent.CompletableFuture<Channel> accepted) {
      try {
        return accepted.get(PROBE_SECONDS, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return accepted.getNow(null);
      } catch (java.util.concurrent.ExecutionException | TimeoutException e) {
        return null;
      }
    }

    /** Why {@code f} failed or did not finish within {@value #PROBE_SECONDS} s, or {@code null}. */
    private static Throwable failure(ChannelFuture f) throws InterruptedException {
      if (!f.await(PROBE_SECONDS, TimeUnit.SECONDS)) {
        return new TimeoutException("an io_uring event loop did not " + (f.channel() instanceof ServerChannel
            ? "bind" : "connect") + " over loopback within " + PROBE_SECONDS + " s (is io_uring_enter refused?)");
      }
      return f.isSuccess() ? null : f.cause();
    }
  }

  /** A new event loop group of {@code threads} ({@code 0}: Netty's default, 2 × cores). */
  public MultiThreadIoEventLoopGroup group(int threads) {
    return new MultiThreadIoEventLoopGroup(threads, ioHandlerFactory);
  }
}
