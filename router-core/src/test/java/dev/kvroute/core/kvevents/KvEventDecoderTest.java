package dev.kvroute.core.kvevents;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.math.BigInteger;
import java.util.HexFormat;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

class KvEventDecoderTest {
  /** A hash above Long.MAX_VALUE, as captured from vLLM v0.26 (the reference's example). */
  private static final BigInteger BIG = new BigInteger("15760518052499183552");

  private interface Body {
    void write(MessageBufferPacker p) throws IOException;
  }

  private static byte[] pack(Body body) throws IOException {
    try (MessageBufferPacker p = MessagePack.newDefaultBufferPacker()) {
      body.write(p);
      return p.toByteArray();
    }
  }

  @Test
  void oldestArrayLayoutStopsAtLoraId() throws IOException {
    byte[] payload = pack(p -> {
      p.packArrayHeader(3).packDouble(1.7e9);
      p.packArrayHeader(1);
      p.packArrayHeader(6).packString("BlockStored");
      p.packArrayHeader(2).packBigInteger(BIG).packLong(7);
      p.packNil();
      p.packArrayHeader(4).packInt(1).packInt(2).packInt(3).packInt(4);
      p.packInt(2);
      p.packNil();
      p.packInt(0);
    });
    KvEventBatch batch = KvEventDecoder.decode(payload);
    assertThat(batch.ts()).isEqualTo(1.7e9);
    assertThat(batch.dataParallelRank()).isZero();
    KvEvent.BlockStored s = (KvEvent.BlockStored) batch.events().get(0);
    assertThat(s.blockHashes()).containsExactly(BIG.longValue(), 7L);
    assertThat(Long.toUnsignedString(s.blockHashes()[0])).isEqualTo("15760518052499183552");
    assertThat(s.parentBlockHash()).isEmpty();
    assertThat(s.tokenIds()).containsExactly(1, 2, 3, 4);
    assertThat(s.blockSize()).isEqualTo(2);
    assertThat(s.medium()).isNull();
    assertThat(s.groupIdx()).isEqualTo(-1);
  }

  @Test
  void fullArrayLayoutWithEveryTrailingFieldAndUnknownExtras() throws IOException {
    byte[] payload = pack(p -> {
      p.packArrayHeader(2).packDouble(5.5);
      p.packArrayHeader(3);
      p.packArrayHeader(13).packString("BlockStored");
      p.packArrayHeader(1).packLong(42);
      p.packLong(41);
      p.packArrayHeader(2).packInt(9).packInt(10);
      p.packInt(2);
      p.packInt(3); // lora_id
      p.packString("GPU");
      p.packString("adapter-a");
      p.packArrayHeader(1).packNil(); // extra_keys
      p.packInt(0); // group_idx
      p.packString("full_attention");
      p.packNil();
      p.packString("a future field");
      p.packArrayHeader(4).packString("BlockRemoved").packArrayHeader(1).packLong(42).packString("GPU").packInt(0);
      p.packArrayHeader(1).packString("AllBlocksCleared");
    });
    List<KvEvent> events = KvEventDecoder.decode(payload).events();
    KvEvent.BlockStored s = (KvEvent.BlockStored) events.get(0);
    assertThat(s.parentBlockHash()).hasValue(41);
    assertThat(s.medium()).isEqualTo("GPU");
    assertThat(s.loraName()).isEqualTo("adapter-a");
    assertThat(s.groupIdx()).isZero();
    KvEvent.BlockRemoved r = (KvEvent.BlockRemoved) events.get(1);
    assertThat(r.blockHashes()).containsExactly(42L);
    assertThat(r.groupIdx()).isZero();
    assertThat(events.get(2)).isEqualTo(new KvEvent.AllBlocksCleared());
  }

  @Test
  void mapEventsInAMapBatchWithBytesHashesAndUnknownKeys() throws IOException {
    byte[] digest = HexFormat.of().parseHex("00112233445566778899aabbccddeeff0011223344556677f0e1d2c3b4a59687");
    byte[] parent = HexFormat.of().parseHex("0102030405060708");
    byte[] payload = pack(p -> {
      p.packMapHeader(3);
      p.packString("events").packArrayHeader(2);
      p.packMapHeader(6);
      p.packString("type").packString("BlockStored");
      p.packString("kv_cache_spec_kind").packString("full_attention");
      p.packString("block_hashes").packArrayHeader(1).packBinaryHeader(32).writePayload(digest);
      p.packString("parent_block_hash").packBinaryHeader(8).writePayload(parent);
      p.packString("token_ids").packArrayHeader(1).packInt(5);
      p.packString("block_size").packInt(1);
      p.packMapHeader(2).packString("block_hashes").packArrayHeader(0).packString("type").packString("BlockRemoved");
      p.packString("ts").packLong(12); // an integral ts is accepted
      p.packString("data_parallel_rank").packNil();
    });
    KvEventBatch batch = KvEventDecoder.decode(payload);
    assertThat(batch.ts()).isEqualTo(12.0);
    assertThat(batch.dataParallelRank()).isEqualTo(-1);
    KvEvent.BlockStored s = (KvEvent.BlockStored) batch.events().get(0);
    assertThat(s.blockHashes()).containsExactly(0xf0e1d2c3b4a59687L); // the digest's last 8 bytes
    assertThat(s.parentBlockHash()).hasValue(0x0102030405060708L);
    assertThat(s.medium()).isNull();
    assertThat(batch.events().get(1)).isInstanceOf(KvEvent.BlockRemoved.class);
  }

  @Test
  void unknownEventTypeDecodesAsUnknownInBothLayouts() throws IOException {
    byte[] array = pack(p -> p.packArrayHeader(2).packDouble(1).packArrayHeader(1)
        .packArrayHeader(2).packString("BlockMoved").packInt(3));
    byte[] map = pack(p -> p.packArrayHeader(2).packDouble(1).packArrayHeader(1)
        .packMapHeader(2).packString("type").packString("BlockMoved").packString("x").packInt(3));
    assertThat(KvEventDecoder.decode(array).events()).containsExactly(new KvEvent.Unknown("BlockMoved"));
    assertThat(KvEventDecoder.decode(map).events()).containsExactly(new KvEvent.Unknown("BlockMoved"));
  }

  @ParameterizedTest
  @EnumSource(KvEventEncoder.Layout.class)
  void roundTripsThroughTheEncoder(KvEventEncoder.Layout layout) {
    KvEventBatch batch = new KvEventBatch(1.75e9, List.of(
        KvEvent.BlockStored.gpu(new long[] {-1L, 3L}, OptionalLong.of(Long.MIN_VALUE), new int[] {1, 2, 3, 4}, 2),
        new KvEvent.BlockStored(new long[] {8}, OptionalLong.empty(), new int[] {0, 0}, 2, null, "lora", 1),
        KvEvent.BlockRemoved.gpu(-1L),
        new KvEvent.AllBlocksCleared()), 2);
    KvEventBatch back = KvEventDecoder.decode(KvEventEncoder.encode(batch, layout));
    assertThat(back.ts()).isEqualTo(batch.ts());
    assertThat(back.dataParallelRank()).isEqualTo(2);
    assertThat(back.events()).hasSize(4);
    KvEvent.BlockStored s = (KvEvent.BlockStored) back.events().get(0);
    assertThat(s.blockHashes()).containsExactly(-1L, 3L);
    assertThat(s.parentBlockHash()).hasValue(Long.MIN_VALUE);
    assertThat(s.tokenIds()).containsExactly(1, 2, 3, 4);
    assertThat(s.medium()).isEqualTo("GPU");
    KvEvent.BlockStored lora = (KvEvent.BlockStored) back.events().get(1);
    assertThat(lora.loraName()).isEqualTo("lora");
    assertThat(lora.groupIdx()).isEqualTo(1);
    assertThat(((KvEvent.BlockRemoved) back.events().get(2)).blockHashes()).containsExactly(-1L);
    assertThat(back.events().get(3)).isInstanceOf(KvEvent.AllBlocksCleared.class);
  }

  @Test
  void anArrayClaimingMoreElementsThanItsPayloadHoldsIsAFormatError() throws IOException {
    // [ts, events] with events' header claiming 2^31 - 1 elements, then nothing
    byte[] events = pack(p -> p.packArrayHeader(2).packDouble(1).packArrayHeader(Integer.MAX_VALUE));
    byte[] hashes = pack(p -> p.packArrayHeader(2).packDouble(1).packArrayHeader(1)
        .packArrayHeader(5).packString("BlockStored").packArrayHeader(Integer.MAX_VALUE));
    byte[] tokens = pack(p -> p.packArrayHeader(2).packDouble(1).packArrayHeader(1)
        .packArrayHeader(5).packString("BlockStored").packArrayHeader(1).packLong(7).packNil()
        .packArrayHeader(Integer.MAX_VALUE));
    for (byte[] payload : List.of(events, hashes, tokens)) {
      assertThatThrownBy(() -> KvEventDecoder.decode(payload)).isInstanceOf(KvEventFormatException.class);
    }
    assertThat(events).hasSize(15); // a fixarray, a float64 and an array32 header: 15 bytes in all
    // a bytes-form block hash claiming 2^31 - 1 bytes (the verification's 30-byte payload)
    byte[] hash = pack(p -> p.packArrayHeader(2).packDouble(1).packArrayHeader(1)
        .packArrayHeader(5).packString("BlockStored").packArrayHeader(1).packBinaryHeader(Integer.MAX_VALUE));
    assertThatThrownBy(() -> KvEventDecoder.decode(hash)).isInstanceOf(KvEventFormatException.class)
        .hasMessageContaining("block hash of 2147483647 bytes");
    assertThatThrownBy(() -> KvEventDecoder.decode(java.util.Arrays.copyOf(events, 14)))
        .isInstanceOf(KvEventFormatException.class).hasMessageContaining("ends inside a value");
  }

  @Test
  void arraysLongerThanTheFirstAllocationDecodeWhole() throws IOException {
    int n = 5_000;
    byte[] payload = pack(p -> {
      p.packArrayHeader(2).packDouble(1).packArrayHeader(1);
      p.packArrayHeader(5).packString("BlockStored").packArrayHeader(n);
      for (int i = 0; i < n; i++) {
        p.packLong(i + 1);
      }
      p.packNil().packArrayHeader(n * 16);
      for (int i = 0; i < n * 16; i++) {
        p.packInt(i);
      }
      p.packInt(16);
    });
    KvEvent.BlockStored stored = (KvEvent.BlockStored) KvEventDecoder.decode(payload).events().get(0);
    assertThat(stored.blockHashes()).hasSize(n).startsWith(1L).endsWith((long) n);
    assertThat(stored.tokenIds()).hasSize(n * 16).endsWith(n * 16 - 1);
  }

  @Test
  void aFieldBeyond32BitsIsAFormatErrorNotTruncated() throws IOException {
    byte[] payload = pack(p -> p.packArrayHeader(2).packDouble(1).packArrayHeader(1)
        .packArrayHeader(5).packString("BlockStored").packArrayHeader(1).packLong(7).packNil()
        .packArrayHeader(16).packInt(1).packInt(2).packInt(3).packInt(4).packInt(5).packInt(6).packInt(7)
        .packInt(8).packInt(9).packInt(10).packInt(11).packInt(12).packInt(13).packInt(14).packInt(15)
        .packInt(16).packLong((1L << 32) + 16));
    assertThatThrownBy(() -> KvEventDecoder.decode(payload))
        .isInstanceOf(KvEventFormatException.class).hasMessageContaining("block_size 4294967312");
  }

  @Test
  void malformedPayloadsSayWhatWasWrong() throws IOException {
    assertThatThrownBy(() -> KvEventDecoder.decode(pack(p -> p.packString("hello"))))
        .isInstanceOf(KvEventFormatException.class).hasMessageContaining("expected: an array or a map");
    assertThatThrownBy(() -> KvEventDecoder.decode(pack(p -> p.packArrayHeader(2).packDouble(1)
        .packArrayHeader(1).packArrayHeader(3).packString("BlockStored").packArrayHeader(0).packNil())))
        .isInstanceOf(KvEventFormatException.class).hasMessageContaining("BlockStored array of 3");
    assertThatThrownBy(() -> KvEventDecoder.decode(pack(p -> p.packArrayHeader(2).packDouble(1)
        .packArrayHeader(1).packMapHeader(1).packString("type").packString("BlockRemoved"))))
        .isInstanceOf(KvEventFormatException.class).hasMessageContaining("without block_hashes");
    assertThatThrownBy(() -> KvEventDecoder.decode(pack(p -> p.packArrayHeader(2).packDouble(1)
        .packArrayHeader(0).packInt(7))))
        .isInstanceOf(KvEventFormatException.class).hasMessageContaining("trailing");
    assertThatThrownBy(() -> KvEventDecoder.decode(new byte[] {(byte) 0x93, 1}))
        .isInstanceOf(KvEventFormatException.class);
    assertThatThrownBy(() -> KvEventDecoder.decode(pack(p -> p.packArrayHeader(2).packDouble(1)
        .packArrayHeader(1).packArrayHeader(5).packString("BlockStored").packArrayHeader(1).packString("x")
        .packNil().packArrayHeader(0).packInt(16))))
        .isInstanceOf(KvEventFormatException.class).hasMessageContaining("block hash is a msgpack STRING");
  }
}
