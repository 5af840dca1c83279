package dev.kvroute.engine.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.kvroute.engine.kvevents.BlockHashFormat;
import dev.kvroute.engine.kvevents.KvEventLayout;
import dev.kvroute.engine.kvevents.KvEventsConfig;
import dev.kvroute.engine.model.EngineConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The mock engine's KV events read by Python with vLLM's own struct definitions: {@code
 * subscribe_check.py} (pyzmq SUB and DEALER, msgspec's strict typed decoder on the structs of {@code
 * make_fixtures.py}) decodes a live batch and a replay from 0 and checks frames, sequence numbers and
 * bytes; {@code make_fixtures.py --check} shows the committed fixtures are what msgspec writes.
 * Needs {@code python3} with msgspec, msgpack and pyzmq ({@code .ci/requirements.txt}): skipped
 * without them, failed without them when {@code CI=true}.
 */
class PythonKvEventsIT {
  private static final Path SCRIPTS = Path.of("src/test/resources/kv-events");
  MockEngineServer server;
  Process python;

  @BeforeAll
  static void needsPython() throws Exception {
    String missing = missingPython();
    if (missing != null) {
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError("CI=true but " + missing + " (.ci/setup-python.sh installs .ci/requirements.txt)");
      }
      Assumptions.abort(missing + ": run pip install -r .ci/requirements.txt");
    }
  }

  /** Null if python3 imports msgspec, msgpack and zmq; otherwise why not. */
  static String missingPython() throws InterruptedException {
    try {
      Process p = new ProcessBuilder("python3", "-c", "import msgspec, msgpack, zmq").redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return "python3 did not start within 60 s";
      }
      return p.exitValue() == 0 ? null : "python3 cannot import msgspec, msgpack and zmq (" + out.strip() + ")";
    } catch (IOException e) {
      return "no python3 (" + e.getMessage() + ")";
    }
  }

  @AfterEach
  void close() {
    if (python != null) {
      python.destroyForcibly();
    }
    if (server != null) {
      server.close();
    }
  }

  @Test
  void committedFixturesAreWhatMsgspecEncodesFromVllmsStructs() throws Exception {
    Process p = new ProcessBuilder("python3", "make_fixtures.py", "--check")
        .directory(SCRIPTS.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).startsWith("checked ");
  }

  @ParameterizedTest
  @EnumSource(KvEventLayout.class)
  void aPythonSubscriberDecodesLiveAndReplayedBatchesIntoVllmsStructs(KvEventLayout layout) throws Exception {
    assertThat(Files.exists(SCRIPTS.resolve("subscribe_check.py"))).isTrue();
    server = MockEngineServer.start(MockEngineOptions.builder()
        .engine(EngineConfig.builder().cost(MockEngineServerIT.COST).numGpuBlocks(40).maxModelLen(600).build())
        .timeScale(100).seed(3).kvEvents(KvEventsConfig.ephemeral(layout, BlockHashFormat.INT)).build());
    // Batches before the subscriber starts: the replay must return them too.
    for (int i = 1; i <= 4; i++) {
      post(MockEngineServerIT.words(i, 150));
    }
    python = new ProcessBuilder("python3", "subscribe_check.py", server.kvEventsEndpoint(),
        server.kvEventsReplayEndpoint(), "kv-events", layout.cliName())
        .directory(SCRIPTS.toFile()).redirectErrorStream(true).start();
    List<String> lines = new CopyOnWriteArrayList<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(python.getInputStream(), StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          lines.add(line);
        }
      } catch (IOException e) {
        lines.add("reader: " + e);
      }
    }, "python-subscriber-output");
    reader.setDaemon(true);
    reader.start();
    await().atMost(Duration.ofSeconds(60)).until(() -> lines.contains("READY") || !python.isAlive());
    // The subscription takes effect some time after READY: keep the engine busy until a live batch got through.
    int[] sent = {4};
    await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).until(() -> {
      if (!python.isAlive()) {
        return true;
      }
      if (lines.stream().noneMatch(l -> l.startsWith("{\"live_seq\""))) {
        post(MockEngineServerIT.words(++sent[0], 150));
      }
      return false;
    });
    assertThat(python.waitFor(60, TimeUnit.SECONDS)).isTrue();
    reader.join(10_000);
    assertThat(python.exitValue()).as(String.join("\n", lines)).isZero();
    assertThat(lines).contains("OK");
    String counts = lines.get(lines.indexOf("OK") - 1);
    assertThat(Http.json(counts).get("replayed").asLong()).isPositive();
    assertThat(Http.json(counts).get("BlockStored").asLong()).isPositive();
    assertThat(Http.json(counts).get("BlockRemoved").asLong()).as("the 40-block pool evicted").isPositive();
  }

  private void post(String content) throws Exception {
    assertThat(Http.post(server.url() + "/v1/chat/completions", MockEngineServerIT.chat(content, 4, "")).statusCode())
        .isEqualTo(200);
  }
}
