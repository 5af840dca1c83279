package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.core.kvevents.KvEventStream;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;
import org.zeromq.ZMQException;

/**
 * One backend's KV-event subscription: a JeroMQ SUB socket connected to the engine's PUB endpoint
 * (vLLM's {@code ZmqEventPublisher}), read on its own daemon thread (never an event loop), each
 * 3-frame message ({@code topic, 8-byte big-endian seq, msgpack payload}) handed to a
 * {@link KvEventStream}, which applies it to the index and, on a gap, replays through a DEALER socket
 * on the engine's replay ROUTER endpoint. ZeroMQ reconnects the SUB socket by itself (100 ms, backing
 * off to 5 s) when the engine goes away; a socket error recreates it after a pause.
 *
 * <p>Thread-safe: {@link #close} may be called from any thread; it returns once the thread has
 * stopped (at most about {@link #POLL_MILLIS} plus a replay in progress).
 */
final class KvEventSubscriber implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(KvEventSubscriber.class.getName());
  static final int POLL_MILLIS = 100;
  private static final byte[] EMPTY = new byte[0];

  private final BackendId backend;
  private final URI endpoint;
  private final URI replayEndpoint;
  private final byte[] topic;
  private final Duration replayTimeout;
  private final ZContext context;
  private final KvEventStream stream;
  private final Thread thread;
  private final AtomicLong malformed = new AtomicLong();
  private volatile boolean running = true;

  KvEventSubscriber(BackendId backend, URI endpoint, URI replayEndpoint, String topic, Duration replayTimeout,
      KvEventIndex index, ZContext context) {
    this.backend = backend;
    this.endpoint = endpoint;
    this.replayEndpoint = replayEndpoint;
    this.topic = topic.getBytes(StandardCharsets.UTF_8);
    this.replayTimeout = replayTimeout;
    this.context = context;
    this.stream = new KvEventStream(backend, index, replayEndpoint == null ? null : this::replay,
        () -> System.currentTimeMillis() * 1_000_000L);
    this.thread = new Thread(this::run, "kvroute-kv-events-" + backend.name());
    thread.setDaemon(true);
  }

  void start() {
    thread.start();
  }

  KvEventStream stream() {
    return stream;
  }

  /** Messages that were not 3 frames with an 8-byte sequence number. */
  long malformed() {
    return malformed.get();
  }

  URI endpoint() {
    return endpoint;
  }

  URI replayEndpoint() {
    return replayEndpoint;
  }

  private void run() {
    LOG.log(Level.INFO, "backend {0}: subscribing to KV events at {1}{2}", backend, endpoint,
        replayEndpoint == null ? " (no replay endpoint: a lost batch clears its view)" : ", replay at " + replayEndpoint);
    while (running) {
      ZMQ.Socket sub = null;
      try {
        sub = context.createSocket(SocketType.SUB);
        sub.setLinger(0);
        sub.setReconnectIVL(100);
        sub.setReconnectIVLMax(5_000);
        // a handshake that stalls is dropped and retried after this, not after ZeroMQ's 30 s
        sub.setHandshakeIvl(HANDSHAKE_MILLIS);
        sub.setRcvHWM(100_000);
        sub.setReceiveTimeOut(POLL_MILLIS);
        sub.subscribe(topic);
        sub.connect(endpoint.toString());
        while (running) {
          byte[] first = sub.recv();
          if (first == null) {
            continue; // timeout: check running
          }
          byte[][] frames = new byte[3][];
          frames[0] = first;
          int n = 1;
          while (sub.hasReceiveMore()) {
            byte[] f = sub.recv();
            if (n < 3) {
              frames[n] = f;
            }
            n++;
          }
          if (n != 3 || frames[1].length != 8) {
            malformed.incrementAndGet();
            continue;
          }
          stream.onMessage(ByteBuffer.wrap(frames[1]).getLong(), frames[2]);
        }
      } catch (ZMQException | IllegalStateException e) {
        if (running) {
          LOG.log(Level.WARNING, "backend {0}: KV-event socket failed ({1}); resubscribing in 1 s", backend, e.toString());
          pause(1_000);
        }
      } catch (RuntimeException e) {
        LOG.log(Level.WARNING, "backend " + backend + ": KV event not applied; resubscribing in 1 s", e);
        pause(1_000);
      } finally {
        if (sub != null) {
          try {
            context.destroySocket(sub);
          } catch (RuntimeException ignored) {
            // the context is closing
          }
        }
      }
    }
  }

  private void pause(long millis) {
    long end = System.nanoTime() + millis * 1_000_000L;
    while (running && System.nanoTime() < end) {
      java.util.concurrent.locks.LockSupport.parkNanos(POLL_MILLIS * 1_000_000L);
    }
  }

  /**
   * vLLM's replay protocol: the DEALER sends {@code ["", startSeq(8B BE)]}; the ROUTER answers
   * {@code ["", seq, payload]} for every buffered batch from {@code startSeq}, then
   * {@code ["", -1 (8B signed), ""]}. A request that gets no answer at all within the replay timeout
   * is sent once more on a new connection (a request lost with its connection, or to a ROUTER that
   * was restarting, should not cost the whole view); an answer that stops partway fails.
   */
  private boolean replay(long fromSeq, KvEventStream.Replayer.Sink sink) {
    for (int attempt = 0; attempt < REPLAY_ATTEMPTS && running; attempt++) {
      int answer = replayOnce(fromSeq, sink);
      if (answer != NO_ANSWER) {
        return answer == DONE;
      }
      if (attempt + 1 < REPLAY_ATTEMPTS) {
        LOG.log(Level.INFO, "backend {0}: no answer to the KV-event replay from {1}; asking again", backend, fromSeq);
      } else {
        LOG.log(Level.WARNING, "backend {0}: no answer to the KV-event replay from {1} in {2} attempts of {3} ms",
            new Object[] {backend, fromSeq, REPLAY_ATTEMPTS, replayTimeout.toMillis()});
      }
    }
    return false;
  }

  private static final int REPLAY_ATTEMPTS = 2;
  /**
   * The longest a ZeroMQ connection may take to complete its handshake before it is dropped and
   * retried (ZeroMQ's default is 30 s: a stalled handshake left the subscription silent that long).
   */
  static final int HANDSHAKE_MILLIS = 2_000;
  private static final int DONE = 0;
  private static final int FAILED = 1;
  private static final int NO_ANSWER = 2;

  /** One replay request on a new DEALER: {@link #DONE}, {@link #FAILED} or {@link #NO_ANSWER}. */
  private int replayOnce(long fromSeq, KvEventStream.Replayer.Sink sink) {
    ZMQ.Socket dealer = context.createSocket(SocketType.DEALER);
    try {
      dealer.setLinger(0);
      dealer.setReceiveTimeOut((int) Math.min(Integer.MAX_VALUE, replayTimeout.toMillis()));
      // half the wait for an answer: a stalled handshake is retried within it
      dealer.setHandshakeIvl((int) Math.max(1, Math.min(HANDSHAKE_MILLIS, replayTimeout.toMillis() / 2)));
      dealer.connect(replayEndpoint.toString());
      dealer.sendMore(EMPTY);
      dealer.send(ByteBuffer.allocate(8).putLong(fromSeq).array());
      long deadline = System.nanoTime() + replayTimeout.toNanos() * 4;
      boolean answered = false;
      while (running && System.nanoTime() < deadline) {
        byte[] delimiter = dealer.recv();
        if (delimiter == null) {
          return answered ? FAILED : NO_ANSWER; // nothing more within replayTimeout
        }
        answered = true;
        byte[] seq = dealer.hasReceiveMore() ? dealer.recv() : null;
        byte[] payload = dealer.hasReceiveMore() ? dealer.recv() : null;
        while (dealer.hasReceiveMore()) {
          dealer.recv();
        }
        if (seq == null || seq.length != 8 || payload == null) {
          malformed.incrementAndGet();
          return FAILED;
        }
        long s = ByteBuffer.wrap(seq).getLong();
        if (s == -1) {
          return DONE;
        }
        sink.batch(s, payload);
      }
      return FAILED;
    } catch (ZMQException e) {
      LOG.log(Level.WARNING, "backend {0}: KV-event replay from {1} failed: {2}", backend, fromSeq, e.toString());
      return FAILED;
    } finally {
      context.destroySocket(dealer);
    }
  }

  @Override
  public void close() {
    running = false;
    if (Thread.currentThread() != thread) {
      try {
        thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
