package dev.kvroute.core.index;

import dev.kvroute.core.kvevents.KvEvent;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.ref.Reference;
import java.util.OptionalLong;
import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * Measures a precise view's heap per engine block (issue 15): feeds {@link PreciseView} and the former
 * {@link BoxedPreciseView} the same 200K stored blocks (page 16; engine blocks of 16 tokens = 1 page,
 * and of 64 tokens = 4 pages) in chained 16-block events, and compares the used heap after a full GC
 * with the view reachable and after dropping it, next to {@link PreciseView#estimatedBytes()}.
 *
 * <p>Run from the worktree root after {@code mvn -B -q -pl router-core test-compile}:
 *
 * <pre>{@code
 * java -XX:+UseSerialGC -Xmx1g -cp router-core/target/classes:router-core/target/test-classes \
 *     dev.kvroute.core.index.PreciseViewMemory
 * }</pre>
 */
final class PreciseViewMemory {
  private static final int PAGE = 16;
  private static final int BLOCKS = 200_000;
  private static final int PER_EVENT = 16;

  private PreciseViewMemory() {}

  public static void main(String[] args) {
    System.out.printf("%-9s %10s %7s %12s %12s %10s %10s%n", "view", "blockSize", "blocks", "measuredB",
        "estimatedB", "measB/blk", "estB/blk");
    for (int round = 0; round < 2; round++) { // the first round warms up class loading and JIT
      for (int blockSize : new int[] {PAGE, 4 * PAGE}) {
        measure("boxed", blockSize, round == 1);
        measure("primitive", blockSize, round == 1);
      }
    }
  }

  private static void measure(String kind, int blockSize, boolean print) {
    Object view;
    Consumer<KvEvent> apply;
    if (kind.equals("boxed")) {
      BoxedPreciseView v = new BoxedPreciseView(PAGE);
      view = v;
      apply = v::apply;
    } else {
      PreciseView v = new PreciseView(PAGE);
      view = v;
      apply = v::apply;
    }
    SplittableRandom random = new SplittableRandom(7);
    long hash = 1;
    for (int e = 0; e < BLOCKS / PER_EVENT; e++) {
      long[] hashes = new long[PER_EVENT];
      int[] tokens = new int[PER_EVENT * blockSize];
      for (int t = 0; t < tokens.length; t++) {
        tokens[t] = random.nextInt(200_000);
      }
      OptionalLong parent = e % 4 == 0 ? OptionalLong.empty() : OptionalLong.of(hash); // 64-block chains
      for (int b = 0; b < PER_EVENT; b++) {
        hash = random.nextLong();
        hashes[b] = hash;
      }
      apply.accept(new KvEvent.BlockStored(hashes, parent, tokens, blockSize, "GPU", null, -1));
    }
    long estimated = view instanceof PreciseView p ? p.estimatedBytes() : ((BoxedPreciseView) view).estimatedBytes();
    long with = usedHeapAfterGc();
    Reference.reachabilityFence(view);
    view = null;
    apply = null;
    long without = usedHeapAfterGc();
    long measured = with - without;
    if (print) {
      System.out.printf("%-9s %10d %7d %12d %12d %10.1f %10.1f%n", kind, blockSize, BLOCKS, measured,
          estimated, (double) measured / BLOCKS, (double) estimated / BLOCKS);
    }
  }

  /**
   * The used heap after full collections: with the serial collector the command uses, {@code
   * System.gc()} returns when its full collection has finished, so nothing needs waiting for; the
   * least of four readings leaves out what a finalizer or reference handler freed late.
   */
  private static long usedHeapAfterGc() {
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 4; i++) {
      System.gc();
      used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
    }
    return used;
  }
}
