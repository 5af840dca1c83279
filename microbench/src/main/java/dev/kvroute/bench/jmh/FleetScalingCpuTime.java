package dev.kvroute.bench.jmh;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * {@link FleetScalingBenchmark}'s {@code decide} and {@code route} timed in the calling thread's CPU
 * time rather than wall time, so that percentiles leave out the time the thread waited for a core (on
 * a shared machine, JMH's wall-clock p99 is mostly preemption). Same fleets, fill and workload.
 *
 * <p>Run: {@code java -Xms3g -Xmx3g -cp microbench/target/microbench.jar
 * dev.kvroute.bench.jmh.FleetScalingCpuTime [ops] [backends...]} (default 20000 ops after as many
 * warm-up ops, at 8, 64 and 256 backends). Prints p50, p90 and p99 in µs per fleet size and their
 * ratios to the smallest fleet.
 */
public final class FleetScalingCpuTime {
  private FleetScalingCpuTime() {}

  public static void main(String[] args) {
    int ops = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
    int[] fleets = args.length > 1
        ? Arrays.stream(args, 1, args.length).mapToInt(Integer::parseInt).toArray()
        : new int[] {8, 64, 256};
    ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    java.util.Map<String, double[]> firstFleet = new java.util.HashMap<>();
    System.out.printf("%-9s %-7s %9s %9s %9s   %s%n", "backends", "op", "p50_us", "p90_us", "p99_us", "p50 / p99 vs first");
    for (int backends : fleets) {
      FleetScalingBenchmark b = new FleetScalingBenchmark();
      b.backends = backends;
      b.setUp();
      for (String op : new String[] {"decide", "route"}) {
        long[] t = new long[ops];
        for (int round = 0; round < 2; round++) { // round 0 warms up
          for (int i = 0; i < ops; i++) {
            long t0 = cpu.getCurrentThreadCpuTime();
            Object r = op.equals("decide") ? b.decide() : b.route();
            t[i] = cpu.getCurrentThreadCpuTime() - t0;
            if (r == null) {
              throw new IllegalStateException("no decision");
            }
          }
        }
        Arrays.sort(t);
        double[] p = {t[ops / 2] / 1e3, t[ops * 9 / 10] / 1e3, t[ops * 99 / 100] / 1e3};
        String ratio = "";
        double[] first = firstFleet.putIfAbsent(op, p);
        if (first != null) {
          ratio = String.format("%.2fx / %.2fx", p[0] / first[0], p[2] / first[2]);
        }
        System.out.printf("%-9d %-7s %9.1f %9.1f %9.1f   %s%n", backends, op, p[0], p[1], p[2], ratio);
      }
      b.report();
    }
  }
}
