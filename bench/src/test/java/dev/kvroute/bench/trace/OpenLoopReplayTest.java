package dev.kvroute.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.data.Offset.offset;

import dev.kvroute.bench.report.PolicyFigures;
import dev.kvroute.bench.report.RequestRecord;
import dev.kvroute.bench.sim.OpenLoopSimulator;
import dev.kvroute.bench.sim.SendJitter;
import dev.kvroute.bench.sim.SimPolicies;
import dev.kvroute.core.tokenize.PromptTokenizer;
import dev.kvroute.core.tokenize.SingleTokenVocabulary;
import dev.kvroute.core.tokenize.Tokenizer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The open-loop simulator on tiny traces whose cache hits are known. */
class OpenLoopReplayTest {
  static final PromptTokenizer TOKENIZER = PromptTokenizer.create(Tokenizer.defaultTokenizer());
  static final SingleTokenVocabulary WORDS = SingleTokenVocabulary.of(Tokenizer.defaultTokenizer());

  /**
   * A = [0, 1, 2] (1,400 tokens) at 0 s, B = [0, 1, 3] (1,100) at 30 s, A again at 60 s, all on one
   * replica with room for everything: B finds blocks 0 and 1 (1,024 tokens), the repeat of A finds
   * all of A but its last token's block of 64 (1,344 = floor(1,399 / 64) × 64).
   */
  @Test
  void oneReplicaFindsExactlyTheSharedBlocks() {
    MooncakeTrace trace =
        MooncakeTrace.of(
            "t.jsonl",
            List.of(
                new MooncakeRequest(1, 0, 1400, 4, new int[] {0, 1, 2}),
                new MooncakeRequest(2, 30_000, 1100, 4, new int[] {0, 1, 3}),
                new MooncakeRequest(3, 60_000, 1400, 4, new int[] {0, 1, 2})));
    MooncakeConfig c = MooncakeConfig.defaults().withArrivals(Arrivals.BURST).withFleet(1, 1L << 20);
    c = new MooncakeConfig(
        c.sliceFromMinutes(), c.sliceToMinutes(), c.rateMultiplier(), c.arrivals(), c.bucketSeconds(), c.seed(),
        c.sessionKeys(), c.replicas(), c.kvCapacityTokens(), 64, c.scheduler(), c.maxNumBatchedTokens(),
        c.prefillTokensPerSecond(), c.prefillOverheadSeconds(), c.decodeTokensPerSecond());
    MooncakeWorkload w = MooncakeWorkload.create(trace, c, BlockTokens.of(WORDS));
    OpenLoopSimulator sim = new OpenLoopSimulator(TOKENIZER, WORDS, SimPolicies.seedScenario(), 1);

    for (String policy : List.of("round-robin", "cache-aware", "cost", "oracle")) {
      OpenLoopSimulator.Result r = sim.run(w, policy);
      List<RequestRecord> records =
          r.details().requests().stream().sorted(Comparator.comparingInt(RequestRecord::session)).toList();
      assertThat(records).extracting(RequestRecord::cachedTokens).as(policy).containsExactly(0, 1024, 1344);
      assertThat(r.figures().hitRate()).isEqualTo((1024 + 1344) / 3900.0);
      // the lone first request: 1,400 tokens at 15,000 tokens/s plus 0.02 s
      assertThat(records.get(0).ttftSeconds()).isCloseTo(1400 / 15_000.0 + 0.02, offset(1e-6));
    }
  }

  @Test
  void everyPolicyReplaysEveryRequestAndJitterOnlyMovesArrivals() {
    List<MooncakeRequest> rs = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      rs.add(new MooncakeRequest(i + 1, (i / 4) * 3_000L, 600 + 10 * i, 8, new int[] {0, 100 + i % 7}));
    }
    MooncakeWorkload w =
        MooncakeWorkload.create(
            MooncakeTrace.of("t.jsonl", rs), MooncakeConfig.defaults().withFleet(4, 1L << 16), BlockTokens.of(WORDS));
    OpenLoopSimulator sim = new OpenLoopSimulator(TOKENIZER, WORDS, SimPolicies.seedScenario(), 2);
    for (OpenLoopSimulator.Result r : sim.runAll(w, SimPolicies.names())) {
      PolicyFigures f = r.figures();
      assertThat(f.requests()).as(f.policy()).isEqualTo(40);
      assertThat(r.details().requestsPerReplica().stream().mapToLong(Long::longValue).sum()).isEqualTo(40);
    }
    OpenLoopSimulator.Result exact = sim.run(w, "round-robin");
    OpenLoopSimulator.Result jittered = sim.withJitter(new SendJitter(0.5, 3)).run(w, "round-robin");
    assertThat(jittered.figures().requests()).isEqualTo(40);
    assertThat(jittered.details().requests())
        .extracting(RequestRecord::sentSeconds)
        .isNotEqualTo(exact.details().requests().stream().map(RequestRecord::sentSeconds).toList());
  }
}
