package dev.kvroute.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code --page-size-tokens} of simulate and demo: the routers' index page, else the block size. */
final class PageSizeOptionTest {

  private static SimulateCommand simulate(String... args) {
    SimulateCommand c = new SimulateCommand();
    new CommandLine(c).parseArgs(args);
    return c;
  }

  @Test
  void theFlagSetsTheRoutersPageAndItsAbsenceLeavesTheBlockSize() {
    assertThat(simulate("--page-size-tokens", "64").policyOptions.policies().pageSizeTokens(16)).isEqualTo(64);
    assertThat(simulate().policyOptions.policies().pageSizeTokens(16)).isEqualTo(16);
    assertThat(simulate("--workload", "mooncake").policyOptions.policies().pageSizeTokens(64)).isEqualTo(64);

    DemoCommand demo = new DemoCommand();
    new CommandLine(demo).parseArgs("--page-size-tokens", "32");
    assertThat(demo.policyOptions.policies().pageSizeTokens(16)).isEqualTo(32);
    String help = new CommandLine(new DemoCommand()).getUsageMessage(CommandLine.Help.Ansi.OFF);
    assertThat(help).contains("--page-size-tokens");
  }

  @Test
  void aPageOutsideServesRangeIsRefusedWhileParsing() {
    for (String bad : new String[] {"0", "-1", "4097", "100000"}) {
      assertThatThrownBy(() -> simulate("--page-size-tokens", bad))
          .isInstanceOf(CommandLine.ParameterException.class)
          .hasMessage("--page-size-tokens: " + bad + " (expected: 1..4096, as serve's routing.pageSizeTokens)");
    }
    DemoCommand demo = new DemoCommand();
    assertThatThrownBy(() -> new CommandLine(demo).parseArgs("--page-size-tokens", "0"))
        .isInstanceOf(CommandLine.ParameterException.class);
    assertThat(new CommandLine(new SimulateCommand()).execute("--page-size-tokens", "0")).isEqualTo(2);
  }
}
