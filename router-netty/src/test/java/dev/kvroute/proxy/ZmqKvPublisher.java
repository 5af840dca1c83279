package dev.kvroute.proxy;

import dev.kvroute.engine.kvevents.BlockHashFormat;
import dev.kvroute.engine.kvevents.KvEventEncoder;
import dev.kvroute.engine.kvevents.KvEventLayout;
import dev.kvroute.engine.model.KvCacheEvent;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A test stand-in for vLLM's {@code ZmqEventPublisher} on loopback, encoding with the mock engine's
 * encoder (byte-identical to msgspec's): a PUB socket sending
 * {@code [topic, seq (8 B BE), payload]} and a ROUTER socket answering replay requests from its buffer
 * with {@code [id, "", seq, payload]} then {@code [id, "", -1, ""]}. {@link #skip} loses a batch on the
 * live stream (it stays in the replay buffer), as a slow subscriber over its high-water mark does.
 *
 * <p>Thread-safe: publishing is synchronized; the replay socket is served on its own thread.
 */
final class ZmqKvPublisher implements AutoCloseable {
  private final ZContext context = new ZContext(1);
  private final ZMQ.Socket pub;
  private final ZMQ.Socket router;
  private final int pubPort;
  private final int replayPort;
  private final byte[] topic;
  private final KvEventEncoder encoder;
  private final ArrayDeque<Object[]> buffer = new ArrayDeque<>();
  private final Thread replayThread;
  private volatile boolean running = true;
  private volatile boolean replayAnswers = true;
  private final java.util.concurrent.atomic.AtomicInteger replaysToIgnore = new java.util.concurrent.atomic.AtomicInteger();
  private long next;
  final List<Long> replayRequests = java.util.Collections.synchronizedList(new ArrayList<>());

  ZmqKvPublisher(String topic, KvEventLayout layout, BlockHashFormat hashes) {
    this.topic = topic.getBytes(StandardCharsets.UTF_8);
    this.encoder = new KvEventEncoder(layout, hashes);
    pub = context.createSocket(SocketType.PUB);
    pub.setLinger(0);
    pubPort = pub.bindToRandomPort("tcp://127.0.0.1");
    router = context.createSocket(SocketType.ROUTER);
    router.setLinger(0);
    router.setReceiveTimeOut(50);
    replayPort = router.bindToRandomPort("tcp://127.0.0.1");
    replayThread = new Thread(this::serveReplays, "test-kv-replay");
    replayThread.setDaemon(true);
    replayThread.start();
  }

  URI endpoint() {
    return URI.create("tcp://127.0.0.1:" + pubPort);
  }

  URI replayEndpoint() {
    return URI.create("tcp://127.0.0.1:" + replayPort);
  }

  /** Numbers the next batch {@code seq} (an engine that has been publishing for a while). */
  synchronized void numberFrom(long seq) {
    next = seq;
  }

  void replayAnswers(boolean answers) {
    replayAnswers = answers;
  }

  /** Leaves the next {@code n} replay requests unanswered (recorded all the same). */
  void ignoreReplays(int n) {
    replaysToIgnore.set(n);
  }

  /** Publishes one batch of {@code events}; returns its sequence number. */
  synchronized long publish(List<KvCacheEvent> batch) {
    long seq = buffered(batch);
    pub.sendMore(topic);
    pub.sendMore(ByteBuffer.allocate(8).putLong(seq).array());
    pub.send((byte[]) buffer.peekLast()[1]);
    return seq;
  }

  /** Numbers and buffers {@code batch} without sending it: the live stream loses it. */
  synchronized long skip(List<KvCacheEvent> batch) {
    return buffered(batch);
  }

  private long buffered(List<KvCacheEvent> batch) {
    long seq = next++;
    buffer.addLast(new Object[] {seq, encoder.encode(System.currentTimeMillis() / 1e3, batch, 0)});
    return seq;
  }

  private void serveReplays() {
    while (running) {
      byte[] id = router.recv();
      if (id == null) {
        continue;
      }
      List<byte[]> frames = new ArrayList<>();
      while (router.hasReceiveMore()) {
        frames.add(router.recv());
      }
      if (frames.size() != 2) {
        continue;
      }
      long from = ByteBuffer.wrap(frames.get(1)).getLong();
      replayRequests.add(from);
      if (!replayAnswers || replaysToIgnore.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        continue;
      }
      List<Object[]> copy;
      synchronized (this) {
        copy = new ArrayList<>(buffer);
      }
      for (Object[] b : copy) {
        if ((long) b[0] >= from) {
          router.sendMore(id);
          router.sendMore(new byte[0]);
          router.sendMore(ByteBuffer.allocate(8).putLong((long) b[0]).array());
          router.send((byte[]) b[1]);
        }
      }
      router.sendMore(id);
      router.sendMore(new byte[0]);
      router.sendMore(ByteBuffer.allocate(8).putLong(-1).array());
      router.send(new byte[0]);
    }
  }

  @Override
  public void close() throws InterruptedException {
    running = false;
    replayThread.join(5_000);
    context.close();
  }
}
