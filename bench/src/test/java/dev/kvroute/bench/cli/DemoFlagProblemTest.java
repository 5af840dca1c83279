package dev.kvroute.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Break-test regressions: flags the chosen workload reads are refused before minutes of runs. */
class DemoFlagProblemTest {
  @TempDir Path dir;

  @Test
  void dumpRequestsUnderAFileWasOnlyFoundAfterTheMultiModelRuns() throws Exception {
    Path file = Files.writeString(dir.resolve("plain-file"), "x");
    Path bad = file.resolve("requests.csv");
    assertThat(DemoCommand.flagProblem("multi-model", 0, bad))
        .startsWith("--dump-requests: " + bad + " cannot be written");
    assertThatThrownBy(() -> MultiModelCommands.checkWritable(bad)).isInstanceOf(IllegalArgumentException.class);
    assertThat(DemoCommand.flagProblem("multi-model", 0, dir)).contains("is a directory");
  }

  @Test
  void dumpRequestsToAWritablePathIsAcceptedAndItsDirectoriesCreated() {
    Path ok = dir.resolve("a/b/requests.csv");
    assertThat(DemoCommand.flagProblem("multi-model", 0, ok)).isNull();
    assertThat(ok).exists();
    assertThat(DemoCommand.flagProblem("multi-model", 0, null)).isNull();
  }

  @Test
  void dumpRequestsWithTheSeedWorkloadWasSilentlyIgnored() {
    assertThat(DemoCommand.flagProblem("seed", 0, dir.resolve("x.csv")))
        .startsWith("--dump-requests with --workload seed (expected: --workload multi-model");
  }

  @Test
  void sideLoadOutOfRangeNamedTheRecordFieldInsteadOfTheFlag() {
    for (double bad : new double[] {-1, Double.NaN, Double.POSITIVE_INFINITY, 1e9}) {
      assertThat(DemoCommand.flagProblem("seed", bad, null)).startsWith("--side-load: " + bad + " (expected: 0..4.0)");
    }
    assertThat(DemoCommand.flagProblem("seed", 4, null)).isNull();
    assertThat(DemoCommand.flagProblem("seed", 0.5, null)).isNull();
  }

  @Test
  void sideLoadWithTheMultiModelWorkloadWasSilentlyIgnored() {
    assertThat(DemoCommand.flagProblem("multi-model", 1, null)).contains("--side-load only with the seed workload");
    assertThat(DemoCommand.flagProblem("multi-model", 0, null)).isNull();
  }
}
