package dev.kvroute.engine.kvevents;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.engine.model.KvCacheEvent;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The encoder writes the same bytes as msgspec encoding vLLM's own structs: every fixture of a layout
 * the mock emits ({@code src/test/resources/kv-events/fixtures.json}, made by {@code
 * make_fixtures.py}) is rebuilt from its neutral description and compared byte for byte.
 */
class KvEventEncoderFixtureTest {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  static JsonNode index() throws IOException {
    try (InputStream in = KvEventEncoderFixtureTest.class.getResourceAsStream("/kv-events/fixtures.json")) {
      return MAPPER.readTree(in);
    }
  }

  static Stream<JsonNode> emitted() throws IOException {
    List<JsonNode> out = new ArrayList<>();
    index().get("fixtures").forEach(f -> {
      if (f.get("emittedByMock").asBoolean()) {
        out.add(f);
      }
    });
    return out.stream();
  }

  static byte[] bin(String name) throws IOException {
    try (InputStream in = KvEventEncoderFixtureTest.class.getResourceAsStream("/kv-events/" + name)) {
      assertThat(in).as(name).isNotNull();
      return in.readAllBytes();
    }
  }

  /** A neutral hash: unsigned decimal (int form) or hex of the 32 bytes (bytes form). */
  private static long key(JsonNode h, BlockHashFormat format) {
    if (format == BlockHashFormat.INT) {
      return Long.parseUnsignedLong(h.asText());
    }
    byte[] b = HexFormat.of().parseHex(h.asText());
    long key = ByteBuffer.wrap(b, 24, 8).getLong();
    assertThat(BlockHashFormat.toBytes(key)).as("bytes form of " + Long.toUnsignedString(key)).isEqualTo(b);
    return key;
  }

  private static long[] keys(JsonNode arr, BlockHashFormat format) {
    long[] out = new long[arr.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = key(arr.get(i), format);
    }
    return out;
  }

  static List<KvCacheEvent> events(JsonNode fixture, BlockHashFormat format) {
    List<KvCacheEvent> events = new ArrayList<>();
    for (JsonNode e : fixture.get("events")) {
      switch (e.get("type").asText()) {
        case "BlockStored" -> {
          JsonNode tokens = e.get("token_ids");
          int[] ids = new int[tokens.size()];
          for (int i = 0; i < ids.length; i++) {
            ids[i] = tokens.get(i).asInt();
          }
          events.add(new KvCacheEvent.BlockStored(
              keys(e.get("block_hashes"), format),
              e.get("parent_block_hash").isNull() ? null : key(e.get("parent_block_hash"), format),
              ids,
              e.get("block_size").asInt(),
              e.get("lora_id").isNull() ? null : e.get("lora_id").asInt(),
              e.get("lora_name").isNull() ? null : e.get("lora_name").asText()));
        }
        case "BlockRemoved" -> events.add(new KvCacheEvent.BlockRemoved(keys(e.get("block_hashes"), format)));
        case "AllBlocksCleared" -> events.add(new KvCacheEvent.AllBlocksCleared());
        default -> throw new AssertionError("unknown event type " + e);
      }
    }
    return events;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("emitted")
  void encodesTheSameBytesAsMsgspec(JsonNode fixture) throws IOException {
    KvEventLayout layout = KvEventLayout.fromCliName(fixture.get("layout").asText());
    BlockHashFormat format = BlockHashFormat.fromCliName(fixture.get("hashFormat").asText());
    byte[] expected = bin(fixture.get("file").asText());
    byte[] actual = new KvEventEncoder(layout, format).encode(
        fixture.get("ts").asDouble(), events(fixture, format), fixture.get("dataParallelRank").asInt());
    assertThat(HexFormat.of().formatHex(actual)).isEqualTo(HexFormat.of().formatHex(expected));
  }

  @Test
  void everyLayoutAndHashFormatTheMockEmitsHasFixtures() throws IOException {
    for (KvEventLayout layout : KvEventLayout.values()) {
      for (BlockHashFormat format : BlockHashFormat.values()) {
        assertThat(emitted().filter(f -> f.get("layout").asText().equals(layout.cliName())
            && f.get("hashFormat").asText().equals(format.cliName())).count())
            .as(layout + " " + format).isEqualTo(4);
      }
    }
  }
}
