package dev.kvroute.bench.jmh;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Two builds of this module compared in one JVM, for a machine too busy for JMH's run-by-run
 * averages: each jar (a {@code microbench.jar}) is loaded in its own class loader, and the same
 * benchmark methods of both ({@link RequestParserBenchmark}'s {@code parse} without and with
 * hashing and its Jackson baseline; {@link TextHashBenchmark} over 1 KB and 22 KB when the jar has
 * it) are called in interleaved rounds, so that both builds see the same interference. Prints the
 * minimum, 10th percentile and median over the rounds of the time per call, in µs. Not a JMH
 * harness: no forks, no blackholes (results feed a checksum), 100 warm-up rounds.
 *
 * <p>Run: {@code java -cp microbench.jar dev.kvroute.bench.jmh.InterleavedJars before.jar
 * after.jar 1000} (the last argument is the number of measured rounds).
 */
public final class InterleavedJars {
  private static final int WARM_UP_ROUNDS = 100;

  private record Subject(String name, Object benchmark, Method method, int callsPerRound) {}

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
          checksum += System.identityHashCode(s.method().invoke(s.benchmark()));
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
      out.add(new Subject(tag + " parse hash=" + hash, b, parser.getMethod("parse"), 100));
      if (hash) {
        out.add(new Subject(tag + " jackson", b, parser.getMethod("baselineJacksonTree"), 50));
      }
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
      out.add(new Subject(
          tag + " hash " + bytes + " B", b, hash.getMethod("ofUtf8"), bytes > 2_000 ? 100 : 2_000));
    }
    return out;
  }
}
