package dev.kvroute.cli.logging;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Instant;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.junit.jupiter.api.Test;

final class LineFormatterTest {
  private static final Instant T = Instant.parse("2026-12-01T19:39:57.123Z");

  private static LogRecord record(Level level, String message, Object... params) {
    LogRecord r = new LogRecord(level, message);
    r.setLoggerName("dev.kvroute.proxy.HealthChecker");
    r.setInstant(T);
    r.setParameters(params);
    return r;
  }

  @Test
  void aTextEventIsOneLineWithTimeLevelLoggerAndMessage() {
    String line = new LineFormatter(LogFormat.TEXT, false)
        .format(record(Level.INFO, "backend {0}: KV capacity {1} tokens", "a", "262144"));
    assertThat(line).isEqualTo("2026-12-01T19:39:57.123Z INFO  HealthChecker backend a: KV capacity 262144 tokens"
        + System.lineSeparator());
  }

  @Test
  void levelsAreNamedAsOperatorsKnowThem() {
    assertThat(LineFormatter.levelName(Level.SEVERE)).isEqualTo("ERROR");
    assertThat(LineFormatter.levelName(Level.WARNING)).isEqualTo("WARN");
    assertThat(LineFormatter.levelName(Level.INFO)).isEqualTo("INFO");
    assertThat(LineFormatter.levelName(Level.CONFIG)).isEqualTo("DEBUG");
    assertThat(LineFormatter.levelName(Level.FINE)).isEqualTo("DEBUG");
    assertThat(LineFormatter.levelName(Level.FINER)).isEqualTo("TRACE");
    assertThat(LineFormatter.levelName(Level.FINEST)).isEqualTo("TRACE");
  }

  @Test
  void anExceptionStaysOnTheEventsLineUnlessStackTracesAreAskedFor() {
    LogRecord r = record(Level.SEVERE, "routing failed");
    r.setThrown(new IllegalStateException("boom\nsecond line"));
    String plain = new LineFormatter(LogFormat.TEXT, false).format(r);
    assertThat(plain).hasLineCount(1)
        .endsWith("ERROR HealthChecker routing failed | java.lang.IllegalStateException: boom / second line"
            + System.lineSeparator());
    String traced = new LineFormatter(LogFormat.TEXT, true).format(r);
    assertThat(traced.lines().findFirst().orElseThrow()).endsWith("| java.lang.IllegalStateException: boom / second line");
    assertThat(traced.lines().skip(1)).isNotEmpty().allSatisfy(l -> assertThat(l).startsWith("    "));
    assertThat(traced).contains("at dev.kvroute.cli.logging.LineFormatterTest");
  }

  @Test
  void aMultiLineMessageBecomesOneLine() {
    String line = new LineFormatter(LogFormat.TEXT, false).format(record(Level.WARNING, "first\r\nsecond\nthird"));
    assertThat(line).hasLineCount(1).contains("WARN  HealthChecker first / second / third");
  }

  @Test
  void aJsonEventIsOneObjectPerLine() throws IOException {
    LogRecord r = record(Level.WARNING, "backend {0}: \"quoted\"", "a");
    r.setThrown(new RuntimeException("x"));
    String line = new LineFormatter(LogFormat.JSON, false).format(r);
    assertThat(line).hasLineCount(1);
    JsonNode j = new ObjectMapper().readTree(line);
    assertThat(j.get("time").asText()).isEqualTo("2026-12-01T19:39:57.123Z");
    assertThat(j.get("level").asText()).isEqualTo("WARN");
    assertThat(j.get("logger").asText()).isEqualTo("dev.kvroute.proxy.HealthChecker");
    assertThat(j.get("message").asText()).isEqualTo("backend a: \"quoted\"");
    assertThat(j.get("error").asText()).isEqualTo("java.lang.RuntimeException: x");
    assertThat(j.has("stack")).isFalse();
    assertThat(new ObjectMapper().readTree(new LineFormatter(LogFormat.JSON, true).format(r)).get("stack").asText())
        .contains("at dev.kvroute.cli.logging.LineFormatterTest");
  }
}
