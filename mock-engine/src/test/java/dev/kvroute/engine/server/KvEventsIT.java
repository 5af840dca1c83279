package dev.kvroute.engine.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.kvroute.engine.kvevents.BlockHashFormat;
import dev.kvroute.engine.kvevents.KvEventLayout;
import dev.kvroute.engine.kvevents.KvEventsConfig;
import dev.kvroute.engine.kvevents.KvEventsTestClient;
import dev.kvroute.engine.kvevents.KvEventsTestClient.Message;
import dev.kvroute.engine.model.EngineConfig;
import dev.kvroute.engine.model.KvCacheEvent;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.msgpack.core.MessagePack;
import org.msgpack.value.Value;

/**
 * The mock engine's KV events through real sockets: a JeroMQ SUB client receives every batch of a
 * run (3 frames, the topic, consecutive sequence numbers), the replay socket returns the same bytes
 * from any sequence number with the end marker, and the events describe exactly what the engine
 * cached: the prompt's blocks with its token ids, evictions of blocks stored before, a reset.
 */
class KvEventsIT {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  MockEngineServer server;
  KvEventsTestClient client;

  @AfterEach
  void close() {
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.close();
    }
  }

  static Stream<Arguments> layouts() {
    return Stream.of(
        Arguments.of(KvEventLayout.CURRENT, BlockHashFormat.INT),
        Arguments.of(KvEventLayout.LEGACY, BlockHashFormat.INT),
        Arguments.of(KvEventLayout.CURRENT, BlockHashFormat.BYTES));
  }

  private MockEngineServer start(KvEventLayout layout, BlockHashFormat format, int replayBuffer) {
    KvEventsConfig ephemeral = KvEventsConfig.ephemeral(layout, format);
    KvEventsConfig events = new KvEventsConfig(true, "zmq", ephemeral.endpoint(), ephemeral.replayEndpoint(),
        replayBuffer, 100_000, 100_000, "kv-events", layout, format);
    server = MockEngineServer.start(MockEngineOptions.builder()
        .engine(EngineConfig.builder().cost(MockEngineServerIT.COST).numGpuBlocks(40).maxModelLen(600).build())
        .timeScale(100).enablePromptTokensDetails(true).seed(7).kvEvents(events).build());
    client = new KvEventsTestClient(server.kvEventsEndpoint(), server.kvEventsReplayEndpoint(), "kv-events");
    return server;
  }

  private int[] tokenize(String content) throws Exception {
    HttpResponse<String> r = Http.post(server.url() + "/tokenize", MockEngineServerIT.chat(content, 4, ""));
    assertThat(r.statusCode()).isEqualTo(200);
    JsonNode tokens = MAPPER.readTree(r.body()).get("tokens");
    int[] out = new int[tokens.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = tokens.get(i).asInt();
    }
    return out;
  }

  private int chat(String content) throws Exception {
    HttpResponse<String> r = Http.post(server.url() + "/v1/chat/completions", MockEngineServerIT.chat(content, 4, ""));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return MAPPER.readTree(r.body()).at("/usage/prompt_tokens_details/cached_tokens").asInt();
  }

  /**
   * Waits until the subscription is live, then reads up to the last batch sent so far. A PUB socket
   * drops what it sends before a subscriber's subscription reaches it (ZMQ's slow joiner): the whole
   * run below takes about 0.1 s, and once in CI it was over before the SUB had joined. Resetting the
   * empty cache publishes a lone AllBlocksCleared, so the probe changes nothing the test checks.
   */
  private void awaitSubscribed() {
    Message[] first = new Message[1];
    await().atMost(Duration.ofSeconds(60)).until(() -> {
      server.resetPrefixCache();
      first[0] = client.receive(100);
      return first[0] != null;
    });
    long lastProbe = server.kvEventBatchesPublished() - 1;
    for (Message m = first[0]; m.seq() < lastProbe; ) {
      m = client.receive(5_000);
      assertThat(m).as("the probes' batches up to " + lastProbe).isNotNull();
    }
  }

  /** Live messages until one holds AllBlocksCleared (the run's last batch). */
  private List<Message> receiveUntilCleared() {
    List<Message> live = new ArrayList<>();
    while (true) {
      Message m = client.receive(30_000);
      assertThat(m).as("a batch within 30 s (received " + live.size() + ")").isNotNull();
      live.add(m);
      if (m.batch().events().contains(new KvCacheEvent.AllBlocksCleared())) {
        return live;
      }
    }
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("layouts")
  void everyCacheChangeIsPublishedInOrderAndReplayable(KvEventLayout layout, BlockHashFormat format) throws Exception {
    start(layout, format, 10_000);
    double startSeconds = System.currentTimeMillis() / 1e3;
    awaitSubscribed();
    String first = MockEngineServerIT.words(1, 200);
    int[] firstTokens = tokenize(first);
    assertThat(chat(first)).isZero();
    assertThat(chat(first)).as("the second run finds the first one's blocks").isPositive();
    for (int i = 2; i <= 5; i++) {
      chat(MockEngineServerIT.words(i, 200));
    }
    assertThat(server.resetPrefixCache()).isTrue();
    List<Message> live = receiveUntilCleared();
    double endSeconds = System.currentTimeMillis() / 1e3;

    long last = live.get(live.size() - 1).seq();
    assertThat(last).isLessThan(server.kvEventBatchesPublished());
    for (int i = 0; i < live.size(); i++) {
      Message m = live.get(i);
      assertThat(m.topic()).isEqualTo("kv-events");
      assertThat(m.seq()).as("consecutive sequence numbers").isEqualTo(live.get(0).seq() + i);
      assertThat(m.batch().dataParallelRank()).isZero();
      Value raw = MessagePack.newDefaultUnpacker(m.payload()).unpackValue();
      assertThat(raw.isArrayValue()).as("the batch is a positional array").isTrue();
      Value firstEvent = raw.asArrayValue().get(1).asArrayValue().get(0);
      assertThat(layout == KvEventLayout.CURRENT ? firstEvent.isMapValue() : firstEvent.isArrayValue())
          .as(layout + " event encoding").isTrue();
    }

    // The slow joiner may have missed the first batches: the replay socket has all of them, same bytes.
    List<Message> all = client.replay(0, 30_000);
    assertThat(all.size()).as("replayed through the reset").isGreaterThan((int) last);
    assertThat(all).extracting(Message::seq).containsExactlyElementsOf(
        java.util.stream.LongStream.range(0, all.size()).boxed().toList());
    for (Message m : live) {
      assertThat(all.get((int) m.seq()).payload()).isEqualTo(m.payload());
    }
    List<Message> tail = client.replay(last - 2, 30_000);
    assertThat(tail).extracting(Message::seq).containsExactly(last - 2, last - 1, last);

    Set<Long> held = new HashSet<>();
    boolean sawRemoval = false;
    KvCacheEvent.BlockStored firstStored = null;
    double previousTs = 0;
    for (Message m : all) {
      assertThat(m.batch().ts()).isBetween(startSeconds - 1, endSeconds + 1).isGreaterThanOrEqualTo(previousTs);
      previousTs = m.batch().ts();
      for (KvCacheEvent e : m.batch().events()) {
        if (e instanceof KvCacheEvent.BlockStored s) {
          firstStored = firstStored == null ? s : firstStored;
          assertThat(s.blockSize()).isEqualTo(16);
          if (s.parentBlockHash() != null) {
            assertThat(held).contains(s.parentBlockHash());
          }
          for (long h : s.blockHashes()) {
            assertThat(held.add(h)).as("stored once until removed").isTrue();
          }
        } else if (e instanceof KvCacheEvent.BlockRemoved r) {
          sawRemoval = true;
          for (long h : r.blockHashes()) {
            assertThat(held.remove(h)).as("removes a stored block").isTrue();
          }
        } else {
          held.clear();
        }
      }
    }
    assertThat(sawRemoval).as("the 40-block pool evicted").isTrue();
    assertThat(held).isEmpty();
    assertThat(firstStored.parentBlockHash()).isNull();
    int fullPromptBlocks = firstTokens.length / 16;
    assertThat(firstStored.tokenIds()).startsWith(Arrays.copyOf(firstTokens, fullPromptBlocks * 16));
  }

  /** The replay socket's batches from {@code from}, once their last one holds AllBlocksCleared. */
  private List<Message> replayUntilCleared(long from) {
    List<List<Message>> result = new ArrayList<>();
    await().atMost(Duration.ofSeconds(90)).until(() -> {
      List<Message> all = client.replay(from, 30_000);
      result.add(0, all);
      return !all.isEmpty()
          && all.get(all.size() - 1).batch().events().contains(new KvCacheEvent.AllBlocksCleared());
    });
    return result.get(0);
  }

  @Test
  void replayKeepsTheLastBufferStepsBatchesAndAnswersAStartBeyondThemWithTheEndMarkerOnly() throws Exception {
    start(KvEventLayout.CURRENT, BlockHashFormat.INT, 2);
    for (int i = 1; i <= 3; i++) {
      chat(MockEngineServerIT.words(i, 100));
    }
    assertThat(server.resetPrefixCache()).isTrue();
    List<Message> kept = replayUntilCleared(0);
    long last = server.kvEventBatchesPublished() - 1;
    assertThat(last).isGreaterThanOrEqualTo(3);
    assertThat(kept).extracting(Message::seq).containsExactly(last - 1, last);
    assertThat(client.replay(last + 1, 30_000)).isEmpty();
  }

  @Test
  void resetPrefixCacheOverHttpPublishesAllBlocksClearedAlone() throws Exception {
    start(KvEventLayout.LEGACY, BlockHashFormat.INT, 100);
    chat(MockEngineServerIT.words(9, 100));
    HttpResponse<String> r = Http.post(server.url() + "/reset_prefix_cache", "");
    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEmpty();
    List<Message> all = replayUntilCleared(0);
    assertThat(all.get(all.size() - 1).batch().events()).containsExactly(new KvCacheEvent.AllBlocksCleared());
    assertThat(all.get(0).batch().events().get(0)).isInstanceOf(KvCacheEvent.BlockStored.class);
    assertThat(server.stats().cachedBlocks()).isZero();
  }

  @Test
  void eachReplicaOfAFleetPublishesOnItsOwnEndpointsAndNumbersItsOwnBatches() throws Exception {
    KvEventsConfig events = KvEventsConfig.ephemeral(KvEventLayout.CURRENT, BlockHashFormat.INT);
    try (MockEngineFleet fleet = MockEngineFleet.start(MockEngineOptions.builder()
        .engine(EngineConfig.builder().cost(MockEngineServerIT.COST).numGpuBlocks(40).maxModelLen(600).build())
        .timeScale(100).kvEvents(events).build(), 2)) {
      MockEngineServer a = fleet.replicas().get(0);
      MockEngineServer b = fleet.replicas().get(1);
      assertThat(a.kvEventsEndpoint()).isNotEqualTo(b.kvEventsEndpoint());
      assertThat(a.kvEventsReplayEndpoint()).isNotEqualTo(b.kvEventsReplayEndpoint());
      server = a;
      chat(MockEngineServerIT.words(1, 100));
      assertThat(a.resetPrefixCache()).isTrue();
      client = new KvEventsTestClient(a.kvEventsEndpoint(), a.kvEventsReplayEndpoint(), "kv-events");
      List<Message> fromA = replayUntilCleared(0);
      assertThat(fromA.get(0).seq()).isZero();
      assertThat(b.kvEventBatchesPublished()).as("replica 1 served nothing").isZero();
      try (KvEventsTestClient clientB =
          new KvEventsTestClient(b.kvEventsEndpoint(), b.kvEventsReplayEndpoint(), "kv-events")) {
        assertThat(clientB.replay(0, 30_000)).isEmpty();
      }
      client.close();
      client = null;
      server = null;
    }
  }
}
