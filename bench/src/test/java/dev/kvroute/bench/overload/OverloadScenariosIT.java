package dev.kvroute.bench.overload;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import dev.kvroute.bench.trace.BlockTokens;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import dev.kvroute.engine.server.MockEngineServer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Issue 16's overload scenarios at reduced size (15 model seconds of arrivals), each predicted by the
 * simulator with the router's admission queue, then run through real sockets on a bundled fleet at
 * time scale 0.5 (the engines run at half speed, so the path's and the machine's delays weigh half as
 * much in model time).
 *
 * <p>Asserted on the real run: every request ends with a complete stream or a 429/503 with {@code
 * Retry-After} and a JSON body, nothing else; the simulator's admitted count within 5% of the real
 * run's, its rejected count within 5% of all requests (a few dozen are rejected at this size, so 5%
 * of them would be one or two requests), and its mean TTFT of admitted requests within 15%; the high-priority stream's mean
 * TTFT during the flood within 2x its unloaded value; the light tenant's p90 TTFT within 2x its solo
 * value. The timing checks need the machine to keep up with the time scale: a run whose engine clock
 * lag (how late the mock engines' timers fired) is above 0.1 model seconds is run once more, and if
 * that one is too, the timing checks are skipped with the lag in the message (the clean-answer checks
 * still hold).
 */
@org.junit.jupiter.api.extension.ExtendWith(dev.kvroute.bench.LeakDetectionOff.class)
class OverloadScenariosIT {
  static final double DURATION = 15;
  static final double TIME_SCALE = 0.5;

  @ParameterizedTest
  @ValueSource(strings = {"overload-2x", "priority-flood", "tenants"})
  void theSimulatorPredictsTheRealRunAndPriorityAndFairnessHold(String name) throws Exception {
    PromptTokenizer tokenizer = MockEngineServer.sharedPromptTokenizer(Tokenizer.DEFAULT_ENCODING);
    SingleTokenVocabulary vocabulary = SingleTokenVocabulary.of(tokenizer.tokenizer());
    OverloadScenario scenario = OverloadScenario.of(name, DURATION, 16, BlockTokens.of(vocabulary));
    OverloadBench.Result r = null;
    for (int attempt = 0; attempt < 2 && (r == null || !r.trusted()); attempt++) {
      r = OverloadBench.run(scenario, TIME_SCALE, tokenizer, vocabulary);
      OverloadBench.print(r, System.out);
      assertThat(r.real().failed()).as("failures: " + r.real().failureSamples(5)).isZero();
      assertThat(r.real().admitted() + r.real().rejected()).isEqualTo(scenario.loaded().size());
      assertThat(r.simulated().rejected()).as("the scenario overloads the fleet").isPositive();
    }
    if (scenario.focus() != null) {
      assertThat(r.focusRatio(r.simulated(), r.simulatedBaseline())).as("simulated focus ratio")
          .isLessThanOrEqualTo(OverloadBench.MAX_FOCUS_RATIO);
    }
    assumeThat(r.trusted()).as("engine clock lag " + r.engineLagSeconds() + " model s: the machine did not keep up "
        + "with time scale " + TIME_SCALE + "; the timing checks would measure it, not the router").isTrue();
    assertThat(r.admittedDifference()).as("admitted: simulated %d, real %d", r.simulated().admitted(), r.real().admitted())
        .isLessThanOrEqualTo(OverloadBench.MAX_COUNT_RELATIVE);
    // at this reduced size a few dozen requests are rejected, so 5% of them is one or two requests:
    // the rejected count is held to 5% of all requests here (the full-size command prints the relative figure)
    assertThat((double) Math.abs(r.simulated().rejected() - r.real().rejected()) / scenario.loaded().size())
        .as("rejected: simulated %d, real %d", r.simulated().rejected(), r.real().rejected())
        .isLessThanOrEqualTo(OverloadBench.MAX_COUNT_RELATIVE);
    assertThat(r.ttftDifference()).as("mean TTFT of admitted requests: simulated %.3f, real %.3f",
        r.simulated().meanTtft(i -> true), r.real().meanTtft(i -> true)).isLessThanOrEqualTo(OverloadBench.MAX_TTFT_RELATIVE);
    if (scenario.focus() != null) {
      assertThat(r.focusRatio(r.real(), r.realBaseline())).as("real focus ratio")
          .isLessThanOrEqualTo(OverloadBench.MAX_FOCUS_RATIO);
    }
  }

}
