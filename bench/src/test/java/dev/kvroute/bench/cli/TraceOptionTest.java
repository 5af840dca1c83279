package dev.kvroute.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

final class TraceOptionTest {

  @Test
  void traceProblemSaysWhatIsWrong(@TempDir Path dir) throws Exception {
    Path file = Files.writeString(dir.resolve("t.jsonl"), "");
    assertThat(MooncakeOptions.traceProblem(dir.resolve("nope"))).isEqualTo("no such file");
    assertThat(MooncakeOptions.traceProblem(dir)).startsWith("a directory (expected: ");
    assertThat(MooncakeOptions.traceProblem(file)).isNull();
  }
}
