package dev.kvroute.proxy;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * When the self warm-up may stop: the JIT's optimizing compiler (C2) has had work in hand (a task in
 * progress or queued, {@link CompilerBacklog}) at no more than {@value #BUSY_SHARE} of the polls over
 * the last {@link #WINDOW_NANOS} and the last {@value #WINDOW_REQUESTS} requests. The requests matter
 * as much as the time: a method in C1's profiling tier is queued for C2 only when its counters next
 * overflow (HotSpot checks every 1,024 calls, {@code Tier3InvokeNotifyFreqLog}), so a second
 * without requests proves nothing. A share rather than none at all: past the request path, a trickle
 * of small compilations (connection set-up, the Prometheus writer's rarer branches) goes on for
 * minutes and costs little, while the request path's own methods keep C2 busy at every poll.
 *
 * <p>Without the backlog (a JVM without HotSpot's diagnostic commands) a poll counts as busy when the
 * compilers' total time ({@link CompilationMXBean#getTotalCompilationTime()}) grew since the last
 * one, which a single long compilation in progress can hide.
 *
 * <p>Not thread-safe: one thread polls (the warm-up's calling thread).
 */
final class JitQuiet {
  /** The window's shortest span. */
  static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(1);
  /** The fewest requests answered within the window. */
  static final int WINDOW_REQUESTS = 1024;
  /** The largest share of busy polls in a quiet window. */
  static final double BUSY_SHARE = 0.25;
  /** C2 tasks in hand from which the warm-up's client holds back (see {@link #backlogged()}). */
  static final int PAUSE_BACKLOG = 8;

  private record Poll(long at, int answered, boolean busy) {}

  private final IntSupplier backlog;
  private final LongSupplier compileMillis;
  private final ArrayDeque<Poll> window = new ArrayDeque<>();
  private int busyInWindow;
  private long lastMillis = -1;
  private int lastBacklog;

  /**
   * @param backlog C2 tasks in hand, {@link CompilerBacklog#UNKNOWN} when unreadable; {@code null}
   *     for none
   * @param compileMillis the compilers' total time in ms, the fallback; {@code null} for none (with
   *     no backlog either, every poll is quiet and the request count alone ends the warm-up)
   */
  JitQuiet(IntSupplier backlog, LongSupplier compileMillis) {
    this.backlog = backlog;
    this.compileMillis = compileMillis;
  }

  /** This JVM's: the C2 backlog where it can be read, else the compilation time, else nothing. */
  static JitQuiet forThisJvm() {
    CompilerBacklog b = CompilerBacklog.of();
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    LongSupplier millis = jit != null && jit.isCompilationTimeMonitoringSupported() ? jit::getTotalCompilationTime : null;
    return new JitQuiet(b == null ? null : b::pending, millis);
  }

  /**
   * One poll, {@code answered} requests into the warm-up's phase at {@code now} (nanoseconds):
   * whether the window ending now is quiet.
   */
  boolean poll(int answered, long now) {
    if (backlog == null && compileMillis == null) {
      return true;
    }
    int pending = backlog == null ? CompilerBacklog.UNKNOWN : backlog.getAsInt();
    boolean busy;
    if (pending != CompilerBacklog.UNKNOWN) {
      busy = pending > 0;
      lastBacklog = pending;
    } else if (compileMillis != null) {
      long millis = compileMillis.getAsLong();
      busy = lastMillis >= 0 && millis != lastMillis;
      lastMillis = millis;
      lastBacklog = 0;
    } else {
      busy = false;
      lastBacklog = 0;
    }
    window.addLast(new Poll(now, answered, busy));
    busyInWindow += busy ? 1 : 0;
    // the shortest window ending now that still spans both the time and the requests
    while (window.size() > 1) {
      java.util.Iterator<Poll> it = window.iterator();
      it.next();
      Poll second = it.next();
      if (now - second.at() < WINDOW_NANOS || answered - second.answered() < WINDOW_REQUESTS) {
        break;
      }
      busyInWindow -= window.removeFirst().busy() ? 1 : 0;
    }
    Poll first = window.peekFirst();
    boolean spans = now - first.at() >= WINDOW_NANOS && answered - first.answered() >= WINDOW_REQUESTS;
    return spans && busyInWindow <= BUSY_SHARE * window.size();
  }

  /**
   * Whether the last poll found at least {@value #PAUSE_BACKLOG} C2 tasks in hand. On one core the
   * compiler shares the CPU with the warm-up's own traffic, and requests sent while the request path
   * waits in C2's queue run slowly and add little: the client then holds back and leaves the core
   * to the compiler.
   */
  boolean backlogged() {
    return lastBacklog >= PAUSE_BACKLOG;
  }
}
