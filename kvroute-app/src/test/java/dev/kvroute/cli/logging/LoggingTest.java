package dev.kvroute.cli.logging;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

final class LoggingTest {

  @AfterEach
  void restore() {
    Logging.install(LogLevel.INFO, LogFormat.TEXT, System.err, Map.of());
  }

  @Test
  void theFlagWinsOverTheEnvironmentWhichWinsOverInfo() {
    assertThat(Logging.level(LogLevel.WARN, Map.of(Logging.LEVEL_ENV, "debug"))).isEqualTo(LogLevel.WARN);
    assertThat(Logging.level(null, Map.of(Logging.LEVEL_ENV, "Debug"))).isEqualTo(LogLevel.DEBUG);
    assertThat(Logging.level(null, Map.of())).isEqualTo(LogLevel.INFO);
    assertThat(Logging.format(null, Map.of(Logging.FORMAT_ENV, "json"))).isEqualTo(LogFormat.JSON);
    assertThat(Logging.format(null, Map.of())).isEqualTo(LogFormat.TEXT);
  }

  @Test
  void aBadEnvironmentValueNamesTheVariableAndTheChoices() {
    assertThatThrownBy(() -> Logging.level(null, Map.of(Logging.LEVEL_ENV, "loud")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("KVROUTE_LOG_LEVEL=loud (expected: one of error, warn, info, debug, trace)");
  }

  @Test
  void theInstalledHandlerWritesOneLinePerEventAtTheChosenLevel() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Logging.install(LogLevel.WARN, LogFormat.TEXT, new PrintStream(bytes, true, StandardCharsets.UTF_8), Map.of());
    System.Logger log = System.getLogger("dev.kvroute.test.Probe");
    log.log(System.Logger.Level.INFO, "not shown");
    log.log(System.Logger.Level.WARNING, "backend {0}: shown", "a");
    log.log(System.Logger.Level.ERROR, "failed", new IllegalStateException("why"));
    String out = bytes.toString(StandardCharsets.UTF_8);
    assertThat(out.lines()).hasSize(2);
    assertThat(out.lines().toList().get(0)).matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z WARN  Probe backend a: shown");
    assertThat(out.lines().toList().get(1)).endsWith("ERROR Probe failed | java.lang.IllegalStateException: why");
  }

  @Test
  void nettyStaysAtInfoUnlessTrace() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream stream = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    Logging.install(LogLevel.DEBUG, LogFormat.TEXT, stream, Map.of());
    System.getLogger("io.netty.buffer.PooledByteBufAllocator").log(System.Logger.Level.DEBUG, "netty detail");
    System.getLogger("dev.kvroute.proxy.ProxyExchange").log(System.Logger.Level.DEBUG, "request timeline");
    Logging.install(LogLevel.TRACE, LogFormat.TEXT, stream, Map.of());
    System.getLogger("io.netty.buffer.PooledByteBufAllocator").log(System.Logger.Level.DEBUG, "netty at trace");
    String out = bytes.toString(StandardCharsets.UTF_8);
    assertThat(out).doesNotContain("netty detail").contains("request timeline").contains("netty at trace");
  }

  @Test
  void aShutdownLineHasTheInstalledFormat() {
    Logging.install(LogLevel.INFO, LogFormat.JSON, System.err, Map.of());
    assertThat(Logging.line(java.util.logging.Level.INFO, "dev.kvroute.cli.ServeCommand", "stopped"))
        .startsWith("{\"time\":\"").contains("\"logger\":\"dev.kvroute.cli.ServeCommand\",\"message\":\"stopped\"");
  }
}
