package dev.kvroute.bench.jmh;

import dev.kvroute.core.request.TextHash;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Time of {@link TextHash#ofUtf8} alone over plain ASCII text of {@code bytes} bytes (1 KB, about
 * a chat message; 22 KB, about the proxy harness's whole chat body), so that a change to the hash
 * is measured without the parse around it ({@code RequestParserBenchmark} has that).
 *
 * <p>Run: {@code java -jar microbench/target/microbench.jar TextHashBenchmark}. Figures are in
 * {@code docs/performance.md} ("Issue 18: a cheaper TextHash").
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class TextHashBenchmark {
  @Param({"1024", "22528"})
  public int bytes;

  private byte[] text;

  @Setup(Level.Trial)
  public void setUp() {
    Random r = new Random(18);
    StringBuilder sb = new StringBuilder();
    while (sb.length() < bytes) {
      sb.append("token").append(r.nextInt(1000)).append(' ');
    }
    text = sb.substring(0, bytes).getBytes(StandardCharsets.US_ASCII);
  }

  @Benchmark
  public TextHash ofUtf8() {
    return TextHash.ofUtf8(text, 0, text.length);
  }
}
