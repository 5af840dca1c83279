package dev.kvroute.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** overload's flags: a bad value is a usage error (exit 2) before any scenario runs. */
class OverloadScenarioOptionTest {
  @Test
  void unknownScenarioAfterAKnownOneIsRefusedBeforeAnyScenarioRuns() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new OverloadCommand());
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int rc = cl.execute("--simulate-only", "--scenario", "overload-2x,nope");
    assertThat(rc).isEqualTo(2);
    assertThat(err.toString()).contains("--scenario nope (expected: one of overload-2x, overload-4x");
    assertThat(out.toString()).isEmpty();
  }

  @Test
  void nonPositiveDurationIsAUsageError() {
    CommandLine cl = new CommandLine(new OverloadCommand());
    cl.setErr(new PrintWriter(new StringWriter()));
    assertThat(cl.execute("--simulate-only", "--duration", "-1")).isEqualTo(2);
  }
}
