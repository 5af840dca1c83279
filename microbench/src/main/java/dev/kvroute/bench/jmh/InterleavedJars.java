package dev.kvroute.bench.jmh;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * Two builds of this module compared in one JVM, for a machine too busy for JMH's run-by-run
 * averages: each jar (a {@code microbench.jar}) is loaded in its own class loader, and the same
 * benchmark methods of both ({@link RequestParserBenchmark}'s {@code parse} without and with
 * hashing and its Jackson baseline; {@link TextHashBenchmark} over 1 KB and 22 KB when the jar has
 * it; {@link RoutingBenchmark}'s {@code routeRequest} with a 5,000- and a 32,000-token history,
 * cycling through 64 bodies, each with its own new message, as the proxy benchmark's wrk script
 * does: parse, tokenize, match, insert and pin, release) are called in interleaved rounds, so that
 * both builds see the same interference. Prints the
 * minimum, 10th percentile and median over the rounds of the time per call, in µs. Not a JMH
 * harness: no forks, no blackholes (results feed a checksum), 100 warm-up rounds.
 *
 * <p>Run: {@code java -cp microbench.jar dev.kvroute.bench.jmh.InterleavedJars before.jar
 * after.jar 1000} (the last argument is the number of measured rounds).
 */
public final class InterleavedJars {
  private static final int WARM_UP_ROUNDS = 100;

  private record Subject(String name, Callable<Object> call, int callsPerRound) {}

  private static Subject subject(String name, Object benchmark, Method method, int callsPerRound) {
    return new Subject(name, () -> method.invoke(benchmark), callsPerRound);
  }

  private InterleavedJars() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: InterleavedJars <first.jar> <second.jar> <rounds>");
      System.exit(2);
    }
    List<Subject> subjects = new ArrayList<>();
    for (int j = 0; j < 2; j++) {
      subjects.addAll(subjects(Path.of(args[j])));
    }
    int rounds = Integer.parseInt(args[2]);
    double[][] micros = new double[subjects.size()][rounds];
    long checksum = 0;
    for (int r = -WARM_UP_ROUNDS; r < rounds; r++) {
      for (int k = 0; k < subjects.size(); k++) {
        Subject s = subjects.get(k);
        long t0 = System.nanoTime();
        for (int i = 0; i < s.callsPerRound(); i++) {
          checksum += System.identityHashCode(s.call().call());
        }
        if (r >= 0) {
          micros[k][r] = (System.nanoTime() - t0) / 1e3 / s.callsPerRound();
        }
      }
    }
    for (int k = 0; k < subjects.size(); k++) {
      double[] x = micros[k].clone();
      Arrays.sort(x);
      System.out.printf(
          "%-40s min %9.3f  p10 %9.3f  median %9.3f us%n",
          subjects.get(k).name(), x[0], x[rounds / 10], x[rounds / 2]);
    }
    System.out.println("checksum " + (checksum & 1));
  }

  private static List<Subject> subjects(Path jar) throws Exception {
    String tag = jar.getFileName().toString();
    ClassLoader loader =
        new URLClassLoader(new URL[] {jar.toUri().toURL()}, ClassLoader.getPlatformClassLoader());
    List<Subject> out = new ArrayList<>();
    Class<?> parser = loader.loadClass(RequestParserBenchmark.class.getName());
    for (boolean hash : new boolean[] {false, true}) {
      Object b = parser.getConstructor().newInstance();
      parser.getField("hashWhileParsing").setBoolean(b, hash);
      parser.getMethod("setUp").invoke(b);
      out.add(subject(tag + " parse hash=" + hash, b, parser.getMethod("parse"), 100));
      if (hash) {
        out.add(subject(tag + " jackson", b, parser.getMethod("baselineJacksonTree"), 50));
      }
    }
    for (int history : new int[] {5_000, 32_000}) {
      out.add(route(loader, tag + " route " + history + " tokens", history));
    }
    Class<?> hash;
    try {
      hash = loader.loadClass(TextHashBenchmark.class.getName());
    } catch (ClassNotFoundException e) {
      return out;
    }
    for (int bytes : new int[] {1024, 22528}) {
      Object b = hash.getConstructor().newInstance();
      hash.getField("bytes").setInt(b, bytes);
      hash.getMethod("setUp").invoke(b);
      out.add(subject(
          tag + " hash " + bytes + " B", b, hash.getMethod("ofUtf8"), bytes > 2_000 ? 100 : 2_000));
    }
    return out;
  }

  /**
   * {@code RoutingBenchmark.routeRequest} of the jar's classes (default tokenizer, 8 backends) over
   * 64 bodies with a {@code history}-token conversation, made at setup and taken in turn.
   */
  private static Subject route(ClassLoader loader, String name, int history) throws Exception {
    Class<?> fleetType = loader.loadClass(RoutingBenchmark.Fleet.class.getName());
    Class<?> bodyType = loader.loadClass(RoutingBenchmark.FreshBody.class.getName());
    Class<?> benchType = loader.loadClass(RoutingBenchmark.class.getName());
    Object fleet = fleetType.getConstructor().newInstance();
    fleetType.getField("historyTokens").setInt(fleet, history);
    fleetType.getField("tokenizerSpec").set(fleet, "o200k_base");
    fleetType.getMethod("setUp").invoke(fleet);
    Method nextBody = fleetType.getDeclaredMethod("nextBody");
    nextBody.setAccessible(true);
    java.lang.reflect.Field bodyField = bodyType.getDeclaredField("body");
    bodyField.setAccessible(true);
    Object[] requests = new Object[64];
    for (int i = 0; i < requests.length; i++) {
      requests[i] = bodyType.getConstructor().newInstance();
      bodyField.set(requests[i], nextBody.invoke(fleet));
    }
    Object bench = benchType.getConstructor().newInstance();
    Method routeRequest = benchType.getMethod("routeRequest", fleetType, bodyType);
    int[] next = {0};
    return new Subject(name, () -> routeRequest.invoke(bench, fleet, requests[next[0]++ & 63]),
        history > 10_000 ? 20 : 100);
  }
}
