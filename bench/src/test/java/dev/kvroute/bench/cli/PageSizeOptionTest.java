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
  void aPageBelowOneIsRefusedWithTheFlagsName() {
    assertThatThrownBy(() -> simulate("--page-size-tokens", "-1").policyOptions.policies())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("--page-size-tokens: -1 (expected: > 0)");
    assertThatThrownBy(() -> simulate("--page-size-tokens", "0").policyOptions.policies())
        .hasMessage("--page-size-tokens: 0 (expected: > 0)");
  }
}
