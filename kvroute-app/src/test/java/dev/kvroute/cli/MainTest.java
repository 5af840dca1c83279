package dev.kvroute.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

final class MainTest {

  @Test
  void aMissingTraceIsAUsageErrorThatSaysSo(@TempDir Path dir) {
    Path missing = dir.resolve("nonexistent.jsonl");
    for (String command : new String[] {"simulate", "loadtest"}) {
      StringWriter err = new StringWriter();
      CommandLine cl = Main.commandLine();
      cl.setErr(new PrintWriter(err));
      cl.setOut(new PrintWriter(new StringWriter()));
      int code = cl.execute(command, "--workload", "mooncake", "--trace", missing.toString());
      assertThat(code).as(command).isEqualTo(CommandLine.ExitCode.USAGE);
      assertThat(err.toString()).as(command)
          .contains("kvroute " + command + ": --trace: " + missing + ": no such file");
    }
  }
}
