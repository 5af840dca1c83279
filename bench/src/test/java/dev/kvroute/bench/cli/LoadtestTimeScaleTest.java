package dev.kvroute.bench.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvroute.engine.server.MockEngineOptions;
import dev.kvroute.engine.server.MockEngineServer;
import java.net.URI;
import java.util.List;
import org.junit.jupiter.api.Test;

/** loadtest's time scale against running engines: auto reads theirs; a different number is refused. */
class LoadtestTimeScaleTest {
  @Test
  void autoReadsTheEnginesScaleAndAMismatchIsRefusedBeforeAnyRequest() throws Exception {
    try (MockEngineServer a = engine(3); MockEngineServer b = engine(3)) {
      List<URI> engines = List.of(URI.create(a.url()), URI.create(b.url()));
      assertThat(LoadtestCommand.engineTimeScale(engines, Double.NaN)).isEqualTo(3);
      assertThat(LoadtestCommand.engineTimeScale(engines, 3)).isEqualTo(3);
      assertThatThrownBy(() -> LoadtestCommand.engineTimeScale(engines, 5))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("--time-scale 5, but the engines run at 3 (their kvroute_mock_time_scale): give the same, or auto");
    }
  }

  @Test
  void enginesAtDifferentScalesAreRefused() throws Exception {
    try (MockEngineServer a = engine(3); MockEngineServer b = engine(2)) {
      assertThatThrownBy(() -> LoadtestCommand.engineTimeScale(List.of(URI.create(a.url()), URI.create(b.url())), Double.NaN))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("the engines run at different time scales (3 and 2 at ");
    }
  }

  @Test
  void timeScaleFlagValues() {
    assertThat(TimeScales.parse("auto", "--time-scale")).isNaN();
    assertThat(TimeScales.parse("2.5", "--time-scale")).isEqualTo(2.5);
    assertThatThrownBy(() -> TimeScales.parse("0", "--time-scale"))
        .hasMessage("--time-scale: 0 (expected: a number > 0, or auto)");
    assertThatThrownBy(() -> TimeScales.parse("fast", "--time-scale"))
        .hasMessage("--time-scale: fast (expected: a number > 0, or auto)");
  }

  private static MockEngineServer engine(double k) {
    return MockEngineServer.start(MockEngineOptions.builder().host("127.0.0.1").port(0).timeScale(k).build());
  }
}
