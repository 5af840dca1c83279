package dev.kvroute.bench.jmh;

import dev.kvroute.core.RouterCore;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.RequestView;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;

/**
 * The {@link RoutingBenchmark} request path timed in thread CPU time rather than wall time: per
 * request, the CPU microseconds of parsing the body, tokenizing it, and routing the tokens, as
 * percentiles. On a machine shared with other work, wall-time percentiles measure the scheduler as
 * much as the code (a preempted thread waits whole time slices); CPU time leaves that out, though
 * not a busy hyperthread sibling or cache contention. Same fleet, body and routing as
 * {@code RoutingBenchmark.routeRequest}, one thread.
 *
 * <p>Run (after building {@code microbench/target/microbench.jar}; arguments: requests per round, rounds,
 * the last round is reported, and the tokenizer, {@code o200k_base} (default), {@code hf:qwen3}
 * ({@code hf} for short) or {@code hf:llama3_1} as in {@code RoutingBenchmark}):
 *
 * <pre>{@code
 * java -Xms1g -Xmx1g -cp microbench/target/microbench.jar dev.kvroute.bench.jmh.RoutingCpuTime 2000 3
 * }</pre>
 */
public final class RoutingCpuTime {
  private RoutingCpuTime() {}

  public static void main(String[] args) throws Exception {
    int requests = args.length > 0 ? Integer.parseInt(args[0]) : 2_000;
    int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    RoutingBenchmark.Fleet fleet = new RoutingBenchmark.Fleet();
    fleet.historyTokens = 32_000;
    fleet.tokenizerSpec = args.length > 2 ? args[2] : "o200k_base";
    fleet.setUp();
    long[] parse = new long[requests];
    long[] tokenize = new long[requests];
    long[] route = new long[requests];
    long[] total = new long[requests];
    long sink = 0;
    for (int round = 1; round <= rounds; round++) {
      for (int i = 0; i < requests; i++) {
        byte[] body = fleet.nextBody();
        long t0 = mx.getCurrentThreadCpuTime();
        RequestView view = fleet.parser.parse(Endpoint.CHAT_COMPLETIONS, body, name -> null);
        long t1 = mx.getCurrentThreadCpuTime();
        int[] tokens = fleet.tokenizer.tokenize(view);
        long t2 = mx.getCurrentThreadCpuTime();
        RouterCore.Routed routed = fleet.core.route(tokens, view.sessionKey(), fleet.healthy);
        routed.lease().release();
        long t3 = mx.getCurrentThreadCpuTime();
        sink += routed.predictedCachedTokens();
        parse[i] = t1 - t0;
        tokenize[i] = t2 - t1;
        route[i] = t3 - t2;
        total[i] = t3 - t0;
      }
      System.out.printf("round %d of %d, %d requests, thread CPU us:%n", round, rounds, requests);
      print("parse", parse);
      print("tokenize", tokenize);
      print("routeTokens", route);
      print("total", total);
    }
    if (sink == 42) {
      System.out.println();
    }
  }

  private static void print(String what, long[] nanos) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    System.out.printf(
        "  %-12s p50 %6.0f  p90 %6.0f  p99 %6.0f  p99.9 %6.0f  max %6.0f%n",
        what,
        sorted[n / 2] / 1e3,
        sorted[(int) (n * 0.9)] / 1e3,
        sorted[(int) (n * 0.99)] / 1e3,
        sorted[Math.min(n - 1, (int) (n * 0.999))] / 1e3,
        sorted[n - 1] / 1e3);
  }
}
