package dev.kvroute.core.kvevents;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.index.KvEventIndex;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Applies one backend's KV-event messages to a {@link KvEventIndex} in sequence order and recovers
 * from what the transport loses, following vLLM's {@code ZmqEventPublisher} contract (sequence numbers
 * from 0 upward, one per batch; a replay socket that resends buffered batches from a given number):
 *
 * <ul>
 *   <li>the next number: decoded and applied;
 *   <li>a gap (a number beyond the next): the missing batches are asked of the {@link Replayer} from
 *       the next expected number and applied if they arrive contiguous; if there is no replay socket,
 *       or its buffer no longer reaches back, the view is cleared ({@link KvEventIndex#lostEvents}) and
 *       rebuilds from the current batch on;
 *   <li>the first message after subscribing, numbered above 0: the engine published before the router
 *       listened; the replay socket is asked from 0 (what it still buffers is applied), otherwise the
 *       view simply starts here;
 *   <li>a number at or below the last applied one: a duplicate if a replay already delivered it with
 *       the same bytes (the live socket still brings the batches numbered after the one that
 *       triggered the replay, which the replay may have delivered too, until it passes them),
 *       otherwise the publisher restarted (vLLM numbers from 0 in each process), which clears the view;
 *   <li>a payload that does not decode: counted and skipped (replaying the same bytes would not help).
 * </ul>
 *
 * <p>Not thread-safe: one subscriber thread owns a stream.
 */
public final class KvEventStream {

  /** Resends buffered batches from a sequence number (vLLM's replay ROUTER socket). */
  @FunctionalInterface
  public interface Replayer {
    /** Receives one replayed batch. */
    @FunctionalInterface
    interface Sink {
      void batch(long seq, byte[] payload);
    }

    /**
     * Asks for every buffered batch numbered {@code fromSeq} or above, delivering them to {@code sink}
     * in order until the publisher's end marker.
     *
     * @return false if the replay could not be completed (no answer in time, socket error)
     */
    boolean replay(long fromSeq, Sink sink);
  }

  private final BackendId backend;
  private final KvEventIndex index;
  private final Replayer replayer;
  private final LongSupplier epochNanos;
  private long last = -1;
  /**
   * The batches the last replay delivered ahead of the live socket, by number, with their payload's
   * hash: a live batch numbered there is a duplicate only with the same bytes; other bytes are a new
   * process's batch (a restart). Emptied once the live socket passes them.
   */
  private final java.util.Map<Long, Integer> duplicateHashes = new java.util.HashMap<>();

  private final AtomicLong received = new AtomicLong();
  private final AtomicLong undecodable = new AtomicLong();
  private final AtomicLong duplicates = new AtomicLong();
  private final AtomicLong gaps = new AtomicLong();
  private final AtomicLong missed = new AtomicLong();
  private final AtomicLong replays = new AtomicLong();
  private final AtomicLong replayFailures = new AtomicLong();
  private final AtomicLong restarts = new AtomicLong();

  /**
   * @param replayer the backend's replay socket, or {@code null} when it has none
   * @param epochNanos wall time in epoch nanoseconds, for the events' lag
   */
  public KvEventStream(BackendId backend, KvEventIndex index, Replayer replayer, LongSupplier epochNanos) {
    this.backend = Objects.requireNonNull(backend, "backend");
    this.index = Objects.requireNonNull(index, "index");
    this.replayer = replayer;
    this.epochNanos = Objects.requireNonNull(epochNanos, "epochNanos");
  }

  /** Handles one message of the live stream: its sequence number and msgpack payload. */
  public void onMessage(long seq, byte[] payload) {
    received.incrementAndGet();
    if (last < 0) {
      if (seq > 0 && replayer != null) {
        replayFrom(0, seq);
      }
    } else if (seq <= last) {
      if (Integer.valueOf(Arrays.hashCode(payload)).equals(duplicateHashes.get(seq))) {
        duplicates.incrementAndGet();
        return;
      }
      restarts.incrementAndGet();
      index.lostEvents(backend, "publisher restarted (sequence " + seq + " after " + last + ")");
      last = -1;
      noDuplicates();
      if (seq > 0 && replayer != null) {
        replayFrom(0, seq);
      }
    } else if (seq > last + 1) {
      gaps.incrementAndGet();
      long from = last + 1;
      boolean recovered = replayer != null && replayFrom(from, seq);
      if (!recovered) {
        missed.addAndGet(seq - last - 1);
        index.lostEvents(backend, "lost batches " + from + ".." + (seq - 1));
      }
    }
    if (seq > last) {
      noDuplicates(); // the live socket is past everything a replay delivered ahead of it
      apply(seq, payload);
    } else {
      duplicates.incrementAndGet();
    }
  }

  private void noDuplicates() {
    duplicateHashes.clear();
  }

  /**
   * Replays from {@code from} and applies what arrives contiguous; returns whether the stream now
   * reaches {@code upTo - 1} (nothing lost before {@code upTo}). {@code upTo} is the live batch that
   * asked for the replay: the live socket delivered the batches before it already, so only those
   * after it that the replay applied can come again ({@link #duplicates}); a number below it that
   * comes again is a new process's.
   */
  private boolean replayFrom(long from, long upTo) {
    replays.incrementAndGet();
    noDuplicates(); // the live socket has passed any earlier replay's batches: it brought upTo
    long before = last;
    boolean[] broken = {false};
    boolean done = replayer.replay(from, (s, payload) -> {
      if (broken[0] || s <= last) {
        return;
      }
      if (last >= 0 && s != last + 1) {
        broken[0] = true; // the buffer no longer reaches back to what we miss
        return;
      }
      if (s > upTo) {
        duplicateHashes.put(s, Arrays.hashCode(payload)); // the live socket may still bring it
      }
      apply(s, payload);
    });
    if (!done) {
      replayFailures.incrementAndGet();
    }
    if (from == 0 && before < 0) {
      return true; // a late subscriber takes what the buffer still holds
    }
    return done && !broken[0] && last >= upTo - 1;
  }

  private void apply(long seq, byte[] payload) {
    last = seq;
    KvEventBatch batch;
    try {
      batch = KvEventDecoder.decode(payload);
    } catch (KvEventFormatException e) {
      undecodable.incrementAndGet();
      return;
    }
    index.apply(backend, batch, epochNanos.getAsLong());
  }

  /** The last sequence number applied, or -1 before the first. */
  public long lastSeq() {
    return last;
  }

  /** Messages received on the live stream. */
  public long received() {
    return received.get();
  }

  /** Payloads that did not decode. */
  public long undecodable() {
    return undecodable.get();
  }

  /** Live messages already applied through a replay, skipped. */
  public long duplicates() {
    return duplicates.get();
  }

  /** Gaps in the sequence numbers. */
  public long gaps() {
    return gaps.get();
  }

  /** Batches lost for good (a gap the replay could not fill). */
  public long missed() {
    return missed.get();
  }

  /** Replay requests sent. */
  public long replays() {
    return replays.get();
  }

  /** Replay requests that got no complete answer. */
  public long replayFailures() {
    return replayFailures.get();
  }

  /** Publisher restarts seen (sequence numbers starting over). */
  public long restarts() {
    return restarts.get();
  }
}
