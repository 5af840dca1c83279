package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.proxy.config.ProxyConfig;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Upstream connection pools: one per backend per event loop. A request takes its upstream connection
 * from the pool of its client channel's event loop, so both channels share one thread and nothing
 * is handed across threads (Netty's {@code HexDumpProxy} habit).
 *
 * <p>An idle pooled connection is closed after {@code pool.idleTimeout} (kept below the backends'
 * keep-alive timeout), when the backend closes it (a read stays pending on idle connections to see
 * that), or when its backend is removed. At most {@code pool.maxIdlePerBackend} idle connections are
 * kept per backend per loop.
 *
 * <p>Upstream pipeline: {@code HttpClientCodec} → {@link UpstreamHandler}, auto-read off. There is
 * deliberately no {@code FlowControlHandler}: it drops the messages it has queued when the channel
 * goes inactive, which would lose the end of a response that the backend sends just before closing
 * (a close-delimited body, {@code Connection: close}). Instead a request reads one socket read at a
 * time and relays every message of that read (see {@link ProxyExchange}).
 *
 * <p>Thread-safe: each loop's pools are touched only on that loop; {@link #evict} and
 * {@link #close} hop onto each loop.
 */
final class UpstreamPool {
  /** Name of the HTTP codec in an upstream pipeline. */
  static final String CODEC = "codec";

  /** Name of the {@link UpstreamHandler} in an upstream pipeline. */
  static final String HANDLER = "upstream";

  private final ProxyConfig config;
  private final Bootstrap template;
  private final ProxyMetrics metrics;
  private final Map<EventLoop, LoopPool> loops = new ConcurrentHashMap<>();
  private volatile boolean closed;

  UpstreamPool(ProxyConfig config, Class<? extends SocketChannel> channelClass, ProxyMetrics metrics) {
    this.config = config;
    this.metrics = metrics;
    this.template = new Bootstrap()
        .channel(channelClass)
        .option(ChannelOption.AUTO_READ, false)
        .option(ChannelOption.TCP_NODELAY, true)
        .option(ChannelOption.SO_KEEPALIVE, true)
        .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, config.timeouts().connect().toMillis()))
        .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(
            config.writeBuffer().lowWaterMarkBytes(), config.writeBuffer().highWaterMarkBytes()))
        .handler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline()
                .addLast(CODEC, new HttpClientCodec(8192, 64 << 10, 64 << 10))
                .addLast(HANDLER, new UpstreamHandler(metrics));
          }
        });
  }

  /**
   * A connection to {@code backend} on {@code loop}: an idle pooled one unless {@code fresh}, else a
   * new one. Must be called on {@code loop}. The future fails with the connect error (including
   * {@link io.netty.channel.ConnectTimeoutException}).
   */
  Future<UpstreamConnection> acquire(Backend backend, EventLoop loop, boolean fresh) {
    LoopPool pool = loops.computeIfAbsent(loop, LoopPool::new);
    if (!fresh) {
      UpstreamConnection idle = pool.poll(backend.id());
      if (idle != null) {
        idle.markReused();
        metrics.poolAcquired(true);
        return loop.newSucceededFuture(idle);
      }
    }
    metrics.poolAcquired(false);
    Promise<UpstreamConnection> promise = loop.newPromise();
    ChannelFuture connect = template.clone(loop)
        .connect(backend.config().host(), backend.config().port());
    connect.addListener((ChannelFuture f) -> {
      if (f.isSuccess()) {
        Channel ch = f.channel();
        promise.setSuccess(new UpstreamConnection(ch, backend, (UpstreamHandler) ch.pipeline().get(HANDLER)));
      } else {
        promise.setFailure(f.cause());
      }
    });
    return promise;
  }

  /**
   * Returns {@code conn} after a request: kept idle when {@code reusable} (whole response read,
   * keep-alive on both sides), else closed. Must be called on the connection's loop, with no
   * listener attached.
   */
  void release(UpstreamConnection conn, boolean reusable) {
    Channel ch = conn.channel();
    conn.handler().listener(null);
    LoopPool pool = loops.get(ch.eventLoop());
    if (!reusable || closed || pool == null || !ch.isActive() || conn.backend().removed()
        || !pool.offer(conn)) {
      ch.close();
      return;
    }
    conn.handler().onIdleClose(() -> pool.remove(conn));
    conn.idleClose(ch.eventLoop().schedule(() -> {
      pool.remove(conn);
      ch.close();
    }, config.pool().idleTimeout().toNanos(), TimeUnit.NANOSECONDS));
    // keep a read pending so that a close by the backend is seen while idle
    ch.read();
  }

  /** Closes every idle connection to {@code backend} (removed from the router). */
  void evict(BackendId backend) {
    for (Map.Entry<EventLoop, LoopPool> e : loops.entrySet()) {
      e.getKey().execute(() -> e.getValue().closeAll(backend, null));
    }
  }

  /**
   * Closes every idle connection and waits up to {@code timeout} for the closes (so that none is left
   * to the event loops' shutdown); later releases close their connection.
   */
  void close(Duration timeout) {
    closed = true;
    long deadline = System.nanoTime() + timeout.toNanos();
    List<ChannelFuture> closing = Collections.synchronizedList(new ArrayList<>());
    List<Future<?>> swept = new ArrayList<>();
    for (Map.Entry<EventLoop, LoopPool> e : loops.entrySet()) {
      if (!e.getKey().isShuttingDown()) {
        swept.add(e.getKey().submit(() -> e.getValue().closeAll(null, closing)));
      }
    }
    for (Future<?> f : swept) {
      f.awaitUninterruptibly(Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
    }
    for (ChannelFuture f : List.copyOf(closing)) {
      f.awaitUninterruptibly(Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
    }
  }

  /** Idle connections currently pooled, over all loops (approximate when read off-loop). */
  int idleCount() {
    int n = 0;
    for (LoopPool p : loops.values()) {
      n += p.size;
    }
    return n;
  }

  /** One event loop's idle connections per backend; touched only on that loop. */
  private final class LoopPool {
    private final Map<BackendId, ArrayDeque<UpstreamConnection>> idle = new HashMap<>();
    private volatile int size;

    LoopPool(EventLoop loop) {}

    UpstreamConnection poll(BackendId backend) {
      ArrayDeque<UpstreamConnection> q = idle.get(backend);
      while (q != null && !q.isEmpty()) {
        UpstreamConnection c = q.pollLast(); // most recently used first: least likely to be stale
        size--;
        c.cancelIdleClose();
        c.handler().onIdleClose(null);
        if (c.channel().isActive()) {
          return c;
        }
        c.channel().close();
      }
      return null;
    }

    boolean offer(UpstreamConnection c) {
      ArrayDeque<UpstreamConnection> q = idle.computeIfAbsent(c.backend().id(), k -> new ArrayDeque<>());
      if (q.size() >= config.pool().maxIdlePerBackend()) {
        return false;
      }
      q.addLast(c);
      size++;
      return true;
    }

    void remove(UpstreamConnection c) {
      ArrayDeque<UpstreamConnection> q = idle.get(c.backend().id());
      if (q != null && q.remove(c)) {
        size--;
        c.cancelIdleClose();
      }
    }

    /** Closes the idle connections to {@code backend} (all: null), their closes added to {@code closes} if given. */
    void closeAll(BackendId backend, List<ChannelFuture> closes) {
      Iterator<Map.Entry<BackendId, ArrayDeque<UpstreamConnection>>> it = idle.entrySet().iterator();
      while (it.hasNext()) {
        Map.Entry<BackendId, ArrayDeque<UpstreamConnection>> e = it.next();
        if (backend == null || e.getKey().equals(backend)) {
          for (UpstreamConnection c : e.getValue()) {
            c.cancelIdleClose();
            c.handler().onIdleClose(null);
            ChannelFuture closed = c.channel().close();
            if (closes != null) {
              closes.add(closed);
            }
            size--;
          }
          it.remove();
        }
      }
    }
  }
}
