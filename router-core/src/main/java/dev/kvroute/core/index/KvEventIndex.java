package dev.kvroute.core.index;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.kvevents.KvEventBatch;
import java.time.Duration;
import java.util.Objects;

/**
 * A {@link PrefixIndex} that knows, for each backend whose engine publishes vLLM's KV events, what
 * that engine holds (its precise view), and predicts the rest (an approximate index it wraps and keeps
 * fed with every routed prompt, so that a backend whose events stop falls back to a warm view).
 *
 * <p>Per backend, {@link #match} reads the precise view while the backend is in {@link Mode#PRECISE}:
 * it publishes events ({@link #enableEvents}), its first has arrived, they map to the router's pages
 * (the engine's block size is a multiple of the page size), and they have not stopped (no event for
 * {@code staleAfter} while a request routed to it waits for one). Otherwise it reads the approximate
 * view. Routing a
 * prompt to a precise backend also marks its pages speculatively held for {@code speculativeTtl}
 * (llm-d's speculative indexing, 2 s by default), so a burst of requests sharing a new prefix follows
 * the first one before the engine's {@code BlockStored} arrives.
 *
 * <p>Thread-safe: events are applied from one subscriber thread per backend while event loops match
 * and insert; each backend's precise view has its own read-write lock.
 */
public interface KvEventIndex extends PrefixIndex {

  /**
   * A precise index over {@code approximate}'s page size.
   *
   * @param approximate the index used for backends without (usable, live) events; owned from now on
   * @param ticker the clock for speculative entries and staleness
   */
  static KvEventIndex create(PrefixIndex approximate, Ticker ticker, Settings settings) {
    return new EventPrefixIndex(approximate, ticker, settings);
  }

  /**
   * How the precise views behave.
   *
   * @param speculativeTtl how long a routed prompt's pages count as held on the chosen backend before
   *     its engine's events confirm them; zero turns speculation off
   * @param staleAfter how long a backend may receive requests without publishing any event before its
   *     view falls back to the approximate one; it returns at the next event
   */
  record Settings(Duration speculativeTtl, Duration staleAfter) {
    /** llm-d's speculative TTL (2 s) and 30 s of silence before falling back. */
    public static final Settings DEFAULT = new Settings(Duration.ofSeconds(2), Duration.ofSeconds(30));

    public Settings {
      Objects.requireNonNull(speculativeTtl, "speculativeTtl");
      Objects.requireNonNull(staleAfter, "staleAfter");
      if (speculativeTtl.isNegative()) {
        throw new IllegalArgumentException("speculativeTtl: " + speculativeTtl + " (expected: >= 0)");
      }
      if (staleAfter.isNegative() || staleAfter.isZero()) {
        throw new IllegalArgumentException("staleAfter: " + staleAfter + " (expected: > 0)");
      }
    }
  }

  /** Which view answers {@link #match} for a backend right now. */
  enum Mode {
    /** The engine's own events. */
    PRECISE,
    /** The router's prediction: no events (configured, or yet), unusable events, or events that stopped. */
    APPROXIMATE
  }

  /** Receives a backend's mode changes, on whichever thread noticed them; must not block. */
  @FunctionalInterface
  interface ModeListener {
    /**
     * @param reason why, in a few words ({@code "events stopped: none for PT30S while routed to"})
     */
    void changed(BackendId backend, Mode mode, String reason);
  }

  /**
   * What one {@link #apply} did.
   *
   * @param applied events that changed or confirmed the view
   * @param ignored events for another tier (CPU offload) or KV group, which the GPU view does not track
   * @param dropped events that could not be used (unknown type, malformed, block size not a multiple
   *     of the page size)
   */
  record Applied(int applied, int ignored, int dropped) {}

  /**
   * Counters and sizes of one backend's precise view (monotonic counters since it was added).
   *
   * @param batches batches applied
   * @param applied events applied
   * @param ignored events ignored
   * @param dropped events dropped
   * @param clears times the view was emptied (AllBlocksCleared, lost events, restarts)
   * @param blocks engine blocks held now
   * @param speculativePages speculative pages alive or awaiting expiry
   * @param orphanBlocks blocks stored under a parent the view had not seen
   * @param lastEventLagNanos the last batch's age when applied (now minus its {@code ts}), or -1
   * @param mode the current mode
   */
  record ViewStats(
      long batches,
      long applied,
      long ignored,
      long dropped,
      long clears,
      int blocks,
      int speculativePages,
      long orphanBlocks,
      long lastEventLagNanos,
      Mode mode) {}

  /**
   * Declares that {@code backend}'s engine publishes KV events: from now on its mode is precise while
   * its events are usable and live. Idempotent.
   *
   * @throws IllegalArgumentException if {@code backend} is not registered
   */
  void enableEvents(BackendId backend);

  /**
   * Applies one batch from {@code backend}'s engine, in order; events of a backend that is not
   * registered are ignored.
   *
   * @param nowEpochNanos wall time now, for the lag ({@code now - batch.ts}); the simulator passes its
   *     virtual time
   */
  Applied apply(BackendId backend, KvEventBatch batch, long nowEpochNanos);

  /**
   * The engine's events were lost and cannot be replayed (or its publisher restarted): empties the
   * backend's precise view, which rebuilds from the next events. Blocks the engine stored before and
   * still holds are invisible until it stores them again.
   */
  void lostEvents(BackendId backend, String reason);

  /** The backend's current mode (also notifies the {@link ModeListener} of a change). */
  Mode mode(BackendId backend);

  /** The backend's precise-view counters, or {@code null} if it is not registered. */
  ViewStats stats(BackendId backend);

  /** Sets the one listener of mode changes (replacing any previous one). */
  void onModeChange(ModeListener listener);

  /** The wrapped approximate index. */
  PrefixIndex approximate();
}
