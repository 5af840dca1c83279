package dev.kvroute.bench.jmh;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvroute.core.request.Endpoint;
import dev.kvroute.core.request.InvalidRequestException;
import dev.kvroute.core.request.RequestParser;
import dev.kvroute.core.request.RequestView;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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
 * Time of the proxy's request parse ({@link RequestParser#parse}) on the chat bodies of {@code
 * bench/scripts/proxy-overhead.sh}: 64 bodies of about 22 KB (16 sessions x 4 turns, a system
 * prompt and twelve messages of plain ASCII words, then a new question per turn), parsed in
 * rotation, so that the figure is the parse of the harness's requests without the proxy around it.
 *
 * <ul>
 *   <li>{@code parse}: with {@code hashWhileParsing} true (what {@code cache-aware} and the other
 *       policies that read the prompt use: every message string checked and hashed in one pass) and
 *       false (round-robin and the other policies that read no prompt: checked only).
 *   <li>{@code baselineJacksonTree}: a fixed reference no kvroute change touches, Jackson's {@code
 *       readTree} of the same bodies: compare each figure with it from the same run.
 * </ul>
 *
 * <p>Run: {@code java -jar microbench/target/microbench.jar RequestParserBenchmark}. Figures are in
 * {@code docs/performance.md} ("The string scan's test for a special byte").
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 2, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class RequestParserBenchmark {
  private static final String[] WORDS = ("prefill decode cache block page token replica router prompt"
      + " history session turn model engine queue batch latency throughput memory layer attention"
      + " adapter request stream").split(" ");

  @Param({"false", "true"})
  public boolean hashWhileParsing;

  private final ObjectMapper mapper = new ObjectMapper();
  private byte[][] bodies;
  private RequestParser parser;
  private int next;

  @Setup(Level.Trial)
  public void setUp() {
    Random r = new Random(18);
    List<byte[]> out = new ArrayList<>();
    for (int s = 0; s < 16; s++) {
      ObjectNode body = mapper.createObjectNode();
      body.put("model", "kvroute/mock-llm");
      ArrayNode messages = body.putArray("messages");
      message(messages, "system", "You are assistant " + s + ". " + text(r, 300));
      for (int t = 0; t < 12; t++) {
        message(messages, t % 2 == 0 ? "user" : "assistant", text(r, 150));
      }
      body.put("max_tokens", 16);
      for (int turn = 0; turn < 4; turn++) {
        message(messages, "user", text(r, 80));
        out.add(body.toString().getBytes(StandardCharsets.UTF_8));
        message(messages, "assistant", text(r, 40));
      }
    }
    bodies = out.toArray(new byte[0][]);
    parser = RequestParser.create("x-session-id", "user", hashWhileParsing);
  }

  private static void message(ArrayNode messages, String role, String content) {
    messages.addObject().put("role", role).put("content", content);
  }

  private static String text(Random r, int words) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < words; i++) {
      if (i > 0) {
        sb.append(' ');
      }
      sb.append(WORDS[r.nextInt(WORDS.length)]).append(r.nextInt(1000));
    }
    return sb.toString();
  }

  private byte[] nextBody() {
    byte[] b = bodies[next];
    next = (next + 1) % bodies.length;
    return b;
  }

  @Benchmark
  public RequestView parse() throws InvalidRequestException {
    byte[] b = nextBody();
    return parser.parse(Endpoint.CHAT_COMPLETIONS, b, 0, b.length, name -> null);
  }

  @Benchmark
  public Object baselineJacksonTree() throws IOException {
    return mapper.readTree(nextBody());
  }
}
