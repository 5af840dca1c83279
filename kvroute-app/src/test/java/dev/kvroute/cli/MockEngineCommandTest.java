package dev.kvroute.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code kvroute mock-engine} startup errors: one clear line naming the flag, a non-zero exit, no stack trace. */
final class MockEngineCommandTest {
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cl = new CommandLine(new MockEngineCommand());
    cl.setErr(new PrintWriter(err));
    cl.setOut(new PrintWriter(new StringWriter()));
    return cl.execute(args);
  }

  @Test
  void portInUseIsOneLineAndExitCode1NotAStackTrace() throws Exception {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int code = run("--host", "127.0.0.1", "--port", String.valueOf(taken.getLocalPort()));
      assertThat(code).isEqualTo(CommandLine.ExitCode.SOFTWARE);
      assertThat(err.toString())
          .startsWith("kvroute mock-engine: cannot listen on 127.0.0.1:" + taken.getLocalPort() + ": ")
          .contains("Address already in use")
          .doesNotContain("\tat ");
    }
  }

  @Test
  void unknownTokenizerIsAUsageErrorNamingTheFlag() {
    assertThat(run("--tokenizer", "nope", "--port", "0")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("--tokenizer: nope (expected: ").doesNotContain("\tat ")
        .as("only the router asks an engine").doesNotContain("engine)");
  }

  @Test
  void portPlusReplicasBeyondTheLastPortIsAUsageError() {
    assertThat(run("--port", "65535", "--replicas", "3")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("--port: 65535 with --replicas 3 (expected: port + replicas - 1 <= 65535)");
  }

  @Test
  void outOfRangeEngineValuesAreReportedUnderTheirFlagNames() {
    assertThat(run("--kv-capacity-tokens", "0")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("--kv-capacity-tokens: 0 (expected: > 0)");
  }

  @Test
  void profileSeedIsTheDemosEngineUnderExplicitFlags() {
    MockEngineCommand seed = new MockEngineCommand();
    new CommandLine(seed).parseArgs("--profile", "seed");
    var o = seed.options();
    assertThat(o.engine().scheduler().cliName()).isEqualTo("fcfs-prefill");
    assertThat(o.engine().numGpuBlocks() * o.engine().blockSizeTokens()).isEqualTo(177_472);
    assertThat(o.engine().maxModelLen()).isEqualTo(177_472);
    assertThat(o.enablePromptTokensDetails()).isTrue();

    MockEngineCommand overridden = new MockEngineCommand();
    new CommandLine(overridden).parseArgs("--profile", "seed", "--kv-capacity-tokens", "32000", "--scheduler", "continuous");
    var p = overridden.options();
    assertThat(p.engine().numGpuBlocks() * p.engine().blockSizeTokens()).isEqualTo(32_000);
    assertThat(p.engine().maxModelLen()).isEqualTo(32_000);
    assertThat(p.engine().scheduler().cliName()).isEqualTo("continuous");
  }

  @Test
  void anUnknownProfileIsAUsageErrorNamingTheFlag() {
    assertThat(run("--profile", "nope", "--port", "0")).isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("--profile: nope (expected: seed)");
  }

  @Test
  void kvEventsFlagsGiveVllmsConfigWithTheChosenLayoutAndHashes() {
    MockEngineCommand c = new MockEngineCommand();
    new CommandLine(c).parseArgs("--kv-events-config",
        "{\"enable_kv_cache_events\": true, \"endpoint\": \"tcp://*:5557\", \"topic\": \"kv\"}",
        "--kv-events-layout", "legacy", "--kv-events-block-hashes", "bytes");
    var events = c.options().kvEvents();
    assertThat(events.publishes()).isTrue();
    assertThat(events.endpoint()).isEqualTo("tcp://*:5557");
    assertThat(events.topic()).isEqualTo("kv");
    assertThat(events.layout().cliName()).isEqualTo("legacy");
    assertThat(events.blockHashFormat().cliName()).isEqualTo("bytes");

    MockEngineCommand none = new MockEngineCommand();
    new CommandLine(none).parseArgs();
    assertThat(none.options().kvEvents().publishes()).isFalse();
  }

  @Test
  void aBadKvEventsConfigIsAUsageErrorNamingTheField() {
    assertThat(run("--port", "0", "--kv-events-config", "{\"enable_kv_cache_event\": true}"))
        .isEqualTo(CommandLine.ExitCode.USAGE);
    assertThat(err.toString()).startsWith("--kv-events-config: unknown field enable_kv_cache_event (expected one of [")
        .doesNotContain("\tat ");
  }
}
