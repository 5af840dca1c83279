package dev.kvroute.bench.trace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class MooncakeTraceTest {
  /** The trace this project replays, beside the repository (absent in some checkouts). */
  static final Path SHARED_TRACE = Path.of("../../shared/traces/mooncake_conversation_trace.jsonl");

  static MooncakeTrace parse(String text) throws IOException {
    return MooncakeTrace.parse(new BufferedReader(new StringReader(text)), "t.jsonl");
  }

  @Test
  void readsTheSchemaAndKeepsTheLineOfEachRequest() throws IOException {
    MooncakeTrace t =
        parse(
            "{\"timestamp\": 0, \"input_length\": 1024, \"output_length\": 7, \"hash_ids\": [0, 1]}\n"
                + "\n"
                + "{\"timestamp\": 2999, \"input_length\": 1025, \"output_length\": 1, \"hash_ids\": [0, 1, 2], \"extra\": true}\n");
    assertThat(t.requests()).hasSize(2);
    MooncakeRequest second = t.requests().get(1);
    assertThat(second.line()).isEqualTo(3);
    assertThat(second.timestampMillis()).isEqualTo(2999);
    assertThat(second.inputLength()).isEqualTo(1025);
    assertThat(second.outputLength()).isEqualTo(1);
    assertThat(second.hashIds()).containsExactly(0, 1, 2);
    assertThat(t.lastArrivalMinutes()).isEqualTo(2999 / 60_000.0);
  }

  @Test
  void theLastBlockIsPartialUnlessTheLengthIsAMultipleOf512() {
    assertThat(new MooncakeRequest(1, 0, 1025, 1, new int[] {0, 1, 2}).lastBlockTokens()).isEqualTo(1);
    assertThat(new MooncakeRequest(1, 0, 1024, 1, new int[] {0, 1}).lastBlockTokens()).isEqualTo(512);
    assertThat(new MooncakeRequest(1, 0, 7, 1, new int[] {9}).lastBlockTokens()).isEqualTo(7);
  }

  @Test
  void aMalformedLineIsAnErrorNamingItsLine() {
    assertThatThrownBy(() -> parse("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n{\"timestamp\": 1,"))
        .isInstanceOf(TraceFormatException.class)
        .hasMessageStartingWith("t.jsonl:2: not JSON")
        .satisfies(e -> assertThat(((TraceFormatException) e).line()).isEqualTo(2));
  }

  @Test
  void aWrongNumberOfBlocksIsAnErrorNamingTheExpectedCount() {
    assertThatThrownBy(() -> parse("\n\n{\"timestamp\": 0, \"input_length\": 1537, \"output_length\": 1, \"hash_ids\": [0, 1, 2]}"))
        .isInstanceOf(TraceFormatException.class)
        .hasMessage("t.jsonl:3: hash_ids: 3 ids (expected: ceil(input_length / 512) = 4)");
  }

  @Test
  void missingAndMistypedFieldsAreErrors() {
    assertThatThrownBy(() -> parse("{\"timestamp\": 0, \"output_length\": 1, \"hash_ids\": [0]}"))
        .hasMessage("t.jsonl:1: input_length: missing (expected: an integer)");
    assertThatThrownBy(() -> parse("{\"timestamp\": \"0\", \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}"))
        .hasMessage("t.jsonl:1: timestamp: \"0\" (expected: an integer)");
    assertThatThrownBy(() -> parse("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 0, \"hash_ids\": [0]}"))
        .hasMessage("t.jsonl:1: output_length: 0 (expected: >= 1)");
    assertThatThrownBy(() -> parse("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [\"a\"]}"))
        .hasMessage("t.jsonl:1: hash_ids[0]: \"a\" (expected: an integer)");
    assertThatThrownBy(() -> parse("[1, 2]")).hasMessage("t.jsonl:1: expected a JSON object, got [1, 2]");
  }

  @Test
  void timestampsMustNotGoBackwards() {
    assertThatThrownBy(
            () ->
                parse(
                    "{\"timestamp\": 3000, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n"
                        + "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}"))
        .hasMessage("t.jsonl:2: timestamp: 0 (expected: >= the previous request's 3000)");
  }

  @Test
  void aSliceKeepsTheRequestsArrivingInItsMinutes() throws IOException {
    MooncakeTrace t =
        parse(
            "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n"
                + "{\"timestamp\": 60000, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [1]}\n"
                + "{\"timestamp\": 119999, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [2]}\n"
                + "{\"timestamp\": 120000, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [3]}\n");
    assertThat(t.slice(1, 2).requests()).extracting(MooncakeRequest::line).containsExactly(2, 3);
    assertThatThrownBy(() -> t.slice(2, 1)).hasMessageContaining("expected: 0 <= FROM < TO");
  }

  /**
   * Four requests: A = [0, 1, 2] (1500 tokens), B = [0, 1, 3] (1100), C = [0, 4] (600), D = [0, 1, 2]
   * (1500). A finds nothing; B finds blocks 0 and 1 (1024 tokens); C block 0 (512); D all three (1500).
   */
  @Test
  void theIdealHitRateCountsLeadingBlocksSeenBefore() throws IOException {
    MooncakeTrace t =
        parse(
            "{\"timestamp\": 0, \"input_length\": 1500, \"output_length\": 1, \"hash_ids\": [0, 1, 2]}\n"
                + "{\"timestamp\": 1, \"input_length\": 1100, \"output_length\": 1, \"hash_ids\": [0, 1, 3]}\n"
                + "{\"timestamp\": 2, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [0, 4]}\n"
                + "{\"timestamp\": 3, \"input_length\": 1500, \"output_length\": 1, \"hash_ids\": [0, 1, 2]}\n");
    MooncakeTrace.IdealHitRate ideal = t.idealHitRate();
    assertThat(ideal.hitBlocks()).isEqualTo(0 + 2 + 1 + 3);
    assertThat(ideal.blocks()).isEqualTo(11);
    assertThat(ideal.byBlock()).isEqualTo(6 / 11.0);
    assertThat(ideal.hitTokens()).isEqualTo(0 + 1024 + 512 + 1500);
    assertThat(ideal.byToken()).isEqualTo(3036 / 4700.0);
  }

  @Test
  void theSharedConversationTraceHasTheDocumentedShapeAndIdealHitRate() throws IOException {
    assumeThat(Files.exists(SHARED_TRACE)).as("shared trace present").isTrue();
    MooncakeTrace t = MooncakeTrace.read(SHARED_TRACE);
    assertThat(t.requests()).hasSize(12_031);
    assertThat(t.idealHitRate().byBlock()).isBetween(0.3655, 0.3665);
  }
}
