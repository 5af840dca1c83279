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
  void leakSamplingDefaultsTo4096AndKeepsAGivenInterval() {
    String before = System.getProperty(Main.LEAK_SAMPLING_PROPERTY);
    try {
      System.clearProperty(Main.LEAK_SAMPLING_PROPERTY);
      Main.defaultLeakSampling();
      assertThat(System.getProperty(Main.LEAK_SAMPLING_PROPERTY)).isEqualTo("4096");
      System.setProperty(Main.LEAK_SAMPLING_PROPERTY, "1");
      Main.defaultLeakSampling();
      assertThat(System.getProperty(Main.LEAK_SAMPLING_PROPERTY)).isEqualTo("1");
    } finally {
      if (before == null) {
        System.clearProperty(Main.LEAK_SAMPLING_PROPERTY);
      } else {
        System.setProperty(Main.LEAK_SAMPLING_PROPERTY, before);
      }
    }
  }

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

  @Test
  void aBadLogLevelIsAUsageErrorNamingTheFlagAndTheChoices() {
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine();
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));
    int code = cl.execute("serve", "--log-level", "loud", "--print-config");
    assertThat(code).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).contains("--log-level").contains("'loud' (expected: one of error, warn, info, debug, trace)");
  }

  @Test
  void everyCommandTakesTheLogFlags() {
    CommandLine cl = Main.commandLine();
    for (CommandLine sub : cl.getSubcommands().values()) {
      if (sub.getCommandName().equals("help")) {
        continue;
      }
      assertThat(sub.getCommandSpec().findOption("--log-level")).as(sub.getCommandName()).isNotNull();
      assertThat(sub.getCommandSpec().findOption("--log-format")).as(sub.getCommandName()).isNotNull();
    }
  }

  @Test
  void theLogLevelFlagIsReadOnTheSubcommand() {
    CommandLine cl = Main.commandLine();
    CommandLine.ParseResult parsed = cl.parseArgs("serve", "--log-level", "WARN", "--print-config");
    Main.configureLogging(parsed, java.util.Map.of());
    try {
      assertThat(java.util.logging.Logger.getLogger("").getLevel()).isEqualTo(java.util.logging.Level.WARNING);
    } finally {
      dev.kvroute.cli.logging.Logging.install(dev.kvroute.cli.logging.LogLevel.INFO,
          dev.kvroute.cli.logging.LogFormat.TEXT, System.err, java.util.Map.of());
    }
  }
}
