package dev.kvroute.engine.kvevents;

import dev.kvroute.engine.model.KvCacheEvent;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

/**
 * Publishes KV event batches as vLLM's {@code ZmqEventPublisher} does ({@code
 * vllm/distributed/kv_events.py}), on JeroMQ:
 *
 * <ul>
 *   <li>a PUB socket at {@link KvEventsConfig#endpoint()} sends every batch as 3 frames: the topic
 *       (UTF-8), the sequence number (8 bytes big-endian, 0, 1, 2... per publisher) and the msgpack
 *       payload ({@link KvEventEncoder});
 *   <li>the last {@link KvEventsConfig#bufferSteps()} {@code (seq, payload)} pairs are kept for replay;
 *   <li>a ROUTER socket at {@link KvEventsConfig#replayEndpoint()}, if given, answers a request {@code
 *       [identity, "", start]} ({@code start} 8 bytes big-endian; a REQ or DEALER client sends {@code
 *       ["", start]}) with {@code [identity, "", seq, payload]} for every buffered batch with {@code seq
 *       >= start}, then the end marker {@code [identity, "", -1 as 8 signed big-endian bytes, ""]}; a
 *       request of another frame count is ignored with a warning.
 * </ul>
 *
 * A thread of its own encodes, sends and serves replays (the sockets never leave it); {@link
 * #publish} only queues. Sequence numbers are given when a batch is sent, so a restarted engine
 * starts again at 0, as vLLM does.
 *
 * <p>Thread-safe: {@link #publish} may be called from any thread (in the mock, the engine's event
 * loop).
 */
public final class ZmqKvEventPublisher implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ZmqKvEventPublisher.class.getName());
  /** vLLM's {@code END_SEQ}: -1 as 8 signed big-endian bytes. */
  static final byte[] END_SEQ = ByteBuffer.allocate(8).putLong(-1L).array();
  private static final Object STOP = new Object();

  private record Pending(double tsSeconds, List<KvCacheEvent> events) {}

  private final KvEventsConfig config;
  private final int dataParallelRank;
  private final KvEventEncoder encoder;
  private final byte[] topic;
  private final ZContext context;
  private final ZMQ.Socket pub;
  private final ZMQ.Socket replay;
  private final String boundEndpoint;
  private final String boundReplayEndpoint;
  private final BlockingQueue<Object> queue;
  private final ArrayDeque<Object[]> buffer = new ArrayDeque<>();
  private final Thread thread;
  private final AtomicLong published = new AtomicLong();
  private final AtomicLong replays = new AtomicLong();
  private volatile boolean closed;
  private long nextSeq;

  /**
   * Opens the sockets (binding or connecting per vLLM's rule) and starts the publisher thread.
   *
   * @param config a configuration that {@link KvEventsConfig#publishes() publishes}
   * @param dataParallelRank written into every batch's {@code data_parallel_rank} (vLLM's publisher
   *     fills in its rank); the mock's replicas are separate engines, each rank 0
   * @throws IllegalStateException if a socket cannot be bound or connected (the message names it)
   */
  public ZmqKvEventPublisher(KvEventsConfig config, int dataParallelRank) {
    if (!config.publishes()) {
      throw new IllegalArgumentException("KV events: not enabled with a zmq publisher: " + config);
    }
    this.config = config;
    this.dataParallelRank = dataParallelRank;
    this.encoder = new KvEventEncoder(config.layout(), config.blockHashFormat());
    this.topic = config.topic().getBytes(StandardCharsets.UTF_8);
    this.queue = new ArrayBlockingQueue<>(config.maxQueueSize() + 1);
    this.context = new ZContext();
    try {
      pub = context.createSocket(SocketType.PUB);
      pub.setLinger(0);
      pub.setSndHWM(config.hwm());
      if (binds(config.endpoint())) {
        bind(pub, config.endpoint(), "endpoint");
      } else {
        pub.connect(config.endpoint());
      }
      boundEndpoint = pub.getLastEndpoint() != null ? pub.getLastEndpoint() : config.endpoint();
      if (config.replayEndpoint() != null) {
        replay = context.createSocket(SocketType.ROUTER);
        replay.setLinger(0);
        bind(replay, config.replayEndpoint(), "replay_endpoint");
        boundReplayEndpoint = replay.getLastEndpoint();
      } else {
        replay = null;
        boundReplayEndpoint = null;
      }
    } catch (RuntimeException e) {
      context.close();
      throw e;
    }
    thread = new Thread(this::run, "kv-events-publisher " + boundEndpoint);
    thread.setDaemon(true);
    thread.start();
  }

  /** vLLM's heuristic: bind a wildcard, {@code ::}, {@code ipc://} or {@code inproc://}; connect otherwise. */
  static boolean binds(String endpoint) {
    return endpoint.contains("*") || endpoint.contains("::") || endpoint.startsWith("ipc://")
        || endpoint.startsWith("inproc://");
  }

  private static void bind(ZMQ.Socket socket, String endpoint, String what) {
    try {
      if (!socket.bind(endpoint)) {
        throw new IllegalStateException("KV events " + what + " " + endpoint + ": cannot bind");
      }
    } catch (ZMQException e) {
      String why;
      try {
        why = ZMQ.Error.findByCode(e.getErrorCode()).getMessage();
      } catch (IllegalArgumentException unknown) {
        why = e.getMessage();
      }
      throw new IllegalStateException("KV events " + what + " " + endpoint + ": cannot bind (" + why + ")", e);
    }
  }

  /** The PUB socket's address as bound (a wildcard port resolved), or the connected address. */
  public String endpoint() {
    return boundEndpoint;
  }

  /** The replay ROUTER socket's bound address, or null without one. */
  public String replayEndpoint() {
    return boundReplayEndpoint;
  }

  public KvEventsConfig config() {
    return config;
  }

  /** Batches handed to the PUB socket so far (counted before the send); the last one had sequence number {@code publishedBatches() - 1}. */
  public long publishedBatches() {
    return published.get();
  }

  /** Replay requests answered so far. */
  public long replayRequests() {
    return replays.get();
  }

  /**
   * Queues one batch for the publisher thread; blocks while {@link KvEventsConfig#maxQueueSize()}
   * batches wait (vLLM's {@code queue.put}).
   *
   * @param tsSeconds the batch's {@code ts}, epoch seconds
   * @param events the batch's events, in order (not empty)
   * @throws IllegalStateException after {@link #close()}
   */
  public void publish(double tsSeconds, List<KvCacheEvent> events) {
    if (closed) {
      throw new IllegalStateException("KV event publisher is closed");
    }
    try {
      queue.put(new Pending(tsSeconds, List.copyOf(events)));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while queueing KV events", e);
    }
  }

  private void run() {
    // A poller, not a non-blocking recv, sees the replay socket's new connections and requests:
    // polling makes JeroMQ process the socket's pending commands (pipe attachments).
    ZMQ.Poller poller = replay == null ? null : context.createPoller(1);
    if (poller != null) {
      poller.register(replay, ZMQ.Poller.POLLIN);
    }
    try {
      while (true) {
        Object next;
        if (poller != null) {
          next = queue.poll();
          if (poller.poll(next == null ? 5 : 0) > 0 && poller.pollin(0)) {
            serviceReplays();
          }
        } else {
          next = queue.poll(5, TimeUnit.MILLISECONDS);
        }
        if (next == STOP) {
          break;
        }
        if (next instanceof Pending p) {
          send(p);
        }
      }
      // what was queued before close() still goes out, as vLLM's thread drains its queue
      Object rest;
      while ((rest = queue.poll()) != null) {
        if (rest instanceof Pending p) {
          send(p);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException e) {
      if (!closed) {
        LOG.log(System.Logger.Level.WARNING, "KV event publisher " + boundEndpoint + " stopped", e);
      }
    } finally {
      if (poller != null) {
        poller.close();
      }
      context.close();
    }
  }

  private void send(Pending p) {
    long seq = nextSeq++;
    byte[] payload = encoder.encode(p.tsSeconds(), p.events(), dataParallelRank);
    byte[] seqBytes = ByteBuffer.allocate(8).putLong(seq).array();
    // Counted before the send, so no subscriber can hold a batch the count does not include yet.
    published.incrementAndGet();
    pub.send(topic, ZMQ.SNDMORE);
    pub.send(seqBytes, ZMQ.SNDMORE);
    pub.send(payload, 0);
    buffer.addLast(new Object[] {seq, payload});
    if (buffer.size() > config.bufferSteps()) {
      buffer.removeFirst();
    }
  }

  private void serviceReplays() {
    byte[] first;
    while ((first = replay.recv(ZMQ.DONTWAIT)) != null) {
      List<byte[]> frames = new ArrayList<>();
      frames.add(first);
      while (replay.hasReceiveMore()) {
        frames.add(replay.recv(0));
      }
      if (frames.size() != 3 || frames.get(2).length > 8) {
        LOG.log(System.Logger.Level.WARNING, "KV events " + boundReplayEndpoint + ": invalid replay request of " + frames.size()
            + " frames (expected: identity, empty, 8-byte start sequence)");
        continue;
      }
      byte[] identity = frames.get(0);
      long start = 0;
      for (byte b : frames.get(2)) {
        start = (start << 8) | (b & 0xff);
      }
      for (Object[] entry : buffer) {
        long seq = (Long) entry[0];
        if (Long.compareUnsigned(seq, start) >= 0) {
          replay.send(identity, ZMQ.SNDMORE);
          replay.send(new byte[0], ZMQ.SNDMORE);
          replay.send(ByteBuffer.allocate(8).putLong(seq).array(), ZMQ.SNDMORE);
          replay.send((byte[]) entry[1], 0);
        }
      }
      replay.send(identity, ZMQ.SNDMORE);
      replay.send(new byte[0], ZMQ.SNDMORE);
      replay.send(END_SEQ, ZMQ.SNDMORE);
      replay.send(new byte[0], 0);
      replays.incrementAndGet();
    }
  }

  /** Sends what is queued, stops the thread and closes the sockets (linger 0). Idempotent. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    queue.offer(STOP);
    try {
      thread.join(TimeUnit.SECONDS.toMillis(5));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (thread.isAlive()) {
      LOG.log(System.Logger.Level.WARNING, "KV event publisher " + boundEndpoint + " did not stop within 5 s");
    }
  }

  @Override
  public String toString() {
    return "KV events " + config.layout().cliName() + "/" + config.blockHashFormat().cliName() + " on "
        + boundEndpoint + (boundReplayEndpoint == null ? "" : ", replay " + boundReplayEndpoint)
        + ", topic '" + config.topic() + "'";
  }
}
