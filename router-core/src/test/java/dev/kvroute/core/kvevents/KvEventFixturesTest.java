package dev.kvroute.core.kvevents;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The decoder against the byte-exact fixtures that {@code make_fixtures.py} wrote with msgspec from
 * structs declared as in vLLM's {@code kv_events.py} (v0.9's 6-field array, the array_like layouts with
 * medium / lora_name / extra_keys / group_idx, the current tagged maps, a map-encoded batch; integer
 * and bytes block hashes): every fixture decodes to the events {@code fixtures.json} lists.
 */
class KvEventFixturesTest {
  private static final Path DIR = Path.of("..", "mock-engine", "src", "test", "resources", "kv-events");

  static Stream<JsonNode> fixtures() throws IOException {
    JsonNode root = new ObjectMapper().readTree(DIR.resolve("fixtures.json").toFile());
    List<JsonNode> list = new ArrayList<>();
    root.get("fixtures").forEach(list::add);
    assertThat(list).hasSizeGreaterThanOrEqualTo(30);
    return list.stream();
  }

  /** An expected hash: a decimal unsigned integer, or a hex digest whose last 8 bytes are the key. */
  private static long hash(JsonNode n) {
    String s = n.asText();
    if (s.length() == 64 || s.length() > 20) {
      byte[] digest = HexFormat.of().parseHex(s);
      long h = 0;
      for (int i = digest.length - 8; i < digest.length; i++) {
        h = h << 8 | (digest[i] & 0xFF);
      }
      return h;
    }
    return new BigInteger(s).longValue();
  }

  private static long[] hashes(JsonNode array) {
    long[] out = new long[array.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = hash(array.get(i));
    }
    return out;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("fixtures")
  void decodesTheFixture(JsonNode fixture) throws Exception {
    byte[] payload = Files.readAllBytes(DIR.resolve(fixture.get("file").asText()));
    assertThat(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(payload)))
        .as("the .bin is the one fixtures.json describes").isEqualTo(fixture.get("sha256").asText());
    KvEventBatch batch = KvEventDecoder.decode(payload);
    assertThat(batch.ts()).isEqualTo(fixture.get("ts").asDouble());
    JsonNode rank = fixture.get("dataParallelRank");
    assertThat(batch.dataParallelRank()).isEqualTo(rank == null || rank.isNull() ? -1 : rank.asInt());
    // fixtures.json describes the events neutrally; what each layout can carry (make_fixtures.py):
    // v0.9 neither medium nor lora_name; legacy adds medium "GPU"; the later layouts lora_name and group 0
    String layout = fixture.get("layout").asText();
    boolean medium = !layout.equals("v0.9");
    boolean modern = !layout.equals("v0.9") && !layout.equals("legacy");
    JsonNode events = fixture.get("events");
    assertThat(batch.events()).hasSize(events.size());
    for (int i = 0; i < events.size(); i++) {
      JsonNode want = events.get(i);
      KvEvent got = batch.events().get(i);
      switch (want.get("type").asText()) {
        case "BlockStored" -> {
          KvEvent.BlockStored s = (KvEvent.BlockStored) got;
          assertThat(s.blockHashes()).containsExactly(hashes(want.get("block_hashes")));
          JsonNode parent = want.get("parent_block_hash");
          if (parent == null || parent.isNull()) {
            assertThat(s.parentBlockHash()).isEmpty();
          } else {
            assertThat(s.parentBlockHash()).hasValue(hash(parent));
          }
          int[] tokens = new int[want.get("token_ids").size()];
          for (int t = 0; t < tokens.length; t++) {
            tokens[t] = want.get("token_ids").get(t).asInt();
          }
          assertThat(s.tokenIds()).containsExactly(tokens);
          assertThat(s.blockSize()).isEqualTo(want.get("block_size").asInt());
          assertThat(s.medium()).isEqualTo(medium ? "GPU" : null);
          assertThat(s.loraName()).isEqualTo(modern ? text(want, "lora_name") : null);
          assertThat(s.groupIdx()).isEqualTo(modern ? 0 : -1);
        }
        case "BlockRemoved" -> {
          KvEvent.BlockRemoved r = (KvEvent.BlockRemoved) got;
          assertThat(r.blockHashes()).containsExactly(hashes(want.get("block_hashes")));
          assertThat(r.medium()).isEqualTo(medium ? "GPU" : null);
          assertThat(r.groupIdx()).isEqualTo(modern ? 0 : -1);
        }
        case "AllBlocksCleared" -> assertThat(got).isInstanceOf(KvEvent.AllBlocksCleared.class);
        default -> throw new AssertionError("unexpected type in fixtures.json: " + want);
      }
    }
  }

  private static String text(JsonNode n, String field) {
    JsonNode v = n.get(field);
    return v == null || v.isNull() ? null : v.asText();
  }
}
