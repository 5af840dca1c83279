package dev.kvroute.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvroute.bench.workload.SeedWorkloadConfig;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

final class BlockSizeOptionTest {

  @Test
  void helpStatesEachWorkloadsDefaultBlockSize() {
    String simulate = new CommandLine(new SimulateCommand()).getUsageMessage(CommandLine.Help.Ansi.OFF);
    String loadtest = new CommandLine(new LoadtestCommand()).getUsageMessage(CommandLine.Help.Ansi.OFF);
    String demo = new CommandLine(new DemoCommand()).getUsageMessage(CommandLine.Help.Ansi.OFF);
    int seed = SeedWorkloadConfig.defaults().blockSizeTokens();
    for (String help : new String[] {simulate, loadtest}) {
      assertThat(help.replaceAll("\\s+", " "))
          .contains("KV block size (default: " + seed + " for --workload seed, "
              + MooncakeOptions.DEFAULT_BLOCK_SIZE_TOKENS + " for --workload mooncake)");
    }
    assertThat(demo.replaceAll("\\s+", " ")).contains("KV block size (default: " + seed + ")");
  }

  @Test
  void mooncakeUsesItsOwnDefaultUnlessTheFlagIsGiven() {
    SimulateCommand plain = new SimulateCommand();
    new CommandLine(plain).parseArgs("--workload", "mooncake");
    assertThat(plain.seedOptions.config().blockSizeTokens()).isEqualTo(SeedWorkloadConfig.defaults().blockSizeTokens());
    assertThat(plain.mooncakeOptions.config(plain.seedOptions.config()).blockSizeTokens())
        .isEqualTo(MooncakeOptions.DEFAULT_BLOCK_SIZE_TOKENS);

    SimulateCommand given = new SimulateCommand();
    new CommandLine(given).parseArgs("--workload", "mooncake", "--block-size", "16");
    assertThat(given.mooncakeOptions.config(given.seedOptions.config()).blockSizeTokens()).isEqualTo(16);
  }
}
