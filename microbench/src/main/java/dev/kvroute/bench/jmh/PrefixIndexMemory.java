package dev.kvroute.bench.jmh;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.Ticker;
import dev.kvroute.core.index.PrefixIndex;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.ref.Reference;
import java.util.SplittableRandom;

/**
 * Measures the prefix index's heap per cached token: fills an index of 8 backends x 200K tokens
 * (page 16, or the page in tokens given as the one argument) to capacity, then compares the used heap after a full GC with the index reachable and
 * after dropping it, and sets that against {@link PrefixIndex#estimatedBytes()}. "Cached token" means
 * a token in one backend's view: a page held by 3 backends counts 3 times.
 *
 * <p>Two fills: {@code chat} ({@link ChatHistoryWorkload} routed to the longest match, so system
 * prompts are shared by every backend) and {@code disjoint} (every page held by exactly one backend,
 * the worst case for bytes per cached token).
 *
 * <p>Run (single-threaded serial GC makes the heap figures repeatable):
 *
 * <pre>{@code
 * java -XX:+UseSerialGC -Xmx2g -cp microbench/target/microbench.jar dev.kvroute.bench.jmh.PrefixIndexMemory [PAGE]
 * }</pre>
 */
public final class PrefixIndexMemory {
  private static final int DEFAULT_PAGE = 16;

  private PrefixIndexMemory() {}

  public static void main(String[] args) throws InterruptedException {
    int page = args.length > 0 ? Integer.parseInt(args[0]) : DEFAULT_PAGE;
    if (page <= 0) {
      throw new IllegalArgumentException("page: " + page + " (expected: > 0)");
    }
    System.out.printf("%-9s %10s %12s %12s %11s %11s%n", "fill", "heldTokens", "measuredB",
        "estimatedB", "measB/tok", "estB/tok");
    for (int round = 0; round < 2; round++) { // the first round warms up class loading and JIT
      measure("chat", page, round == 1);
      measure("disjoint", page, round == 1);
    }
  }

  private static void measure(String fill, int page, boolean print) throws InterruptedException {
    BackendId[] backends = new BackendId[PrefixIndexBenchmark.BACKENDS];
    for (int b = 0; b < backends.length; b++) {
      backends[b] = BackendId.of("engine-" + b);
    }
    ChatHistoryWorkload workload = new ChatHistoryWorkload(42, 256, 24_000);
    PrefixIndex index = PrefixIndex.radix(page, Ticker.system());
    for (BackendId backend : backends) {
      index.addBackend(backend, PrefixIndexBenchmark.CAPACITY_TOKENS);
    }
    if (fill.equals("chat")) {
      for (int i = 0; i < 8_000; i++) {
        PrefixIndexBenchmark.route(workload, index, backends);
      }
    } else {
      SplittableRandom random = new SplittableRandom(7);
      int[] prompt = new int[2_048];
      for (int i = 0; i < 2_000; i++) {
        for (int t = 0; t < prompt.length; t++) {
          prompt[t] = random.nextInt(200_000);
        }
        index.insert(backends[i % backends.length], prompt);
      }
    }
    long held = 0;
    for (BackendId backend : backends) {
      held += index.sizeTokens(backend);
    }
    long estimated = index.estimatedBytes();
    long with = usedHeapAfterGc();
    Reference.reachabilityFence(index);
    index = null;
    long without = usedHeapAfterGc();
    Reference.reachabilityFence(workload);
    long measured = with - without;
    if (print) {
      System.out.printf("%-9s %10d %12d %12d %11.2f %11.2f%n", fill, held, measured, estimated,
          (double) measured / held, (double) estimated / held);
    }
  }

  private static long usedHeapAfterGc() throws InterruptedException {
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 4; i++) {
      System.gc();
      Thread.sleep(50);
      used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
    }
    return used;
  }
}
