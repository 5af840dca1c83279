package dev.kvroute.engine.kvevents;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** vLLM's {@code --kv-events-config} JSON, its defaults, its errors and the per-replica port offset. */
class KvEventsConfigTest {

  @Test
  void vllmsExampleJsonParsesWithVllmsDefaultsForWhatItLeavesOut() {
    KvEventsConfig c = KvEventsConfig.parse("{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\","
        + " \"endpoint\": \"tcp://*:5557\", \"replay_endpoint\": \"tcp://*:5558\", \"topic\": \"kv-events\"}",
        KvEventLayout.LEGACY, BlockHashFormat.BYTES);
    assertThat(c.publishes()).isTrue();
    assertThat(c.endpoint()).isEqualTo("tcp://*:5557");
    assertThat(c.replayEndpoint()).isEqualTo("tcp://*:5558");
    assertThat(c.topic()).isEqualTo("kv-events");
    assertThat(c.bufferSteps()).isEqualTo(10_000);
    assertThat(c.hwm()).isEqualTo(100_000);
    assertThat(c.maxQueueSize()).isEqualTo(100_000);
    assertThat(c.layout()).isEqualTo(KvEventLayout.LEGACY);
    assertThat(c.blockHashFormat()).isEqualTo(BlockHashFormat.BYTES);
  }

  @Test
  void publisherDefaultsToZmqWhenEnabledAndNullOtherwiseAsCurrentVllm() {
    assertThat(KvEventsConfig.parse("{\"enable_kv_cache_events\": true}", KvEventLayout.CURRENT, BlockHashFormat.INT)
        .publisher()).isEqualTo("zmq");
    KvEventsConfig off = KvEventsConfig.parse("{}", KvEventLayout.CURRENT, BlockHashFormat.INT);
    assertThat(off.publisher()).isEqualTo("null");
    assertThat(off.publishes()).isFalse();
    assertThat(KvEventsConfig.parse("{\"enable_kv_cache_events\": true, \"publisher\": \"null\"}",
        KvEventLayout.CURRENT, BlockHashFormat.INT).publishes()).isFalse();
  }

  @Test
  void badJsonNamesTheFieldAndWhatWasExpected() {
    assertThatThrownBy(() -> KvEventsConfig.parse("{\"enable_kv_cache_event\": true}", KvEventLayout.CURRENT,
        BlockHashFormat.INT)).hasMessageContaining("unknown field enable_kv_cache_event").hasMessageContaining("topic");
    assertThatThrownBy(() -> KvEventsConfig.parse("{\"buffer_steps\": \"many\"}", KvEventLayout.CURRENT,
        BlockHashFormat.INT)).hasMessageContaining("buffer_steps").hasMessageContaining("expected: an integer");
    assertThatThrownBy(() -> KvEventsConfig.parse("{\"buffer_steps\": 0}", KvEventLayout.CURRENT,
        BlockHashFormat.INT)).hasMessageContaining("buffer_steps: 0 (expected: >= 1)");
    assertThatThrownBy(() -> KvEventsConfig.parse("{\"endpoint\": \"http://x:1\"}", KvEventLayout.CURRENT,
        BlockHashFormat.INT)).hasMessageContaining("endpoint: http://x:1");
    assertThatThrownBy(() -> KvEventsConfig.parse("[1]", KvEventLayout.CURRENT, BlockHashFormat.INT))
        .hasMessageContaining("expected: a JSON object");
    assertThatThrownBy(() -> KvEventsConfig.parse("{", KvEventLayout.CURRENT, BlockHashFormat.INT))
        .hasMessageContaining("not JSON");
    assertThatThrownBy(() -> KvEventLayout.fromCliName("v2")).hasMessageContaining("[legacy, current]");
    assertThatThrownBy(() -> BlockHashFormat.fromCliName("hex")).hasMessageContaining("[int, bytes]");
  }

  @Test
  void replicaIAddsIToBothPortsAsVllmsDataParallelRankDoes() {
    KvEventsConfig c = KvEventsConfig.parse("{\"enable_kv_cache_events\": true, \"endpoint\": \"tcp://*:5557\","
        + " \"replay_endpoint\": \"tcp://0.0.0.0:6000\"}", KvEventLayout.CURRENT, BlockHashFormat.INT);
    assertThat(c.forRank(0)).isEqualTo(c);
    assertThat(c.forRank(3).endpoint()).isEqualTo("tcp://*:5560");
    assertThat(c.forRank(3).replayEndpoint()).isEqualTo("tcp://0.0.0.0:6003");
    assertThat(KvEventsConfig.offsetEndpointPort("inproc://cache", 2)).isEqualTo("inproc://cache_dp2");
    assertThat(KvEventsConfig.offsetEndpointPort("tcp://127.0.0.1:*", 2)).isEqualTo("tcp://127.0.0.1:*");
  }

  @Test
  void bindsWildcardsIpcAndInprocAndConnectsElsewhereAsVllm() {
    assertThat(ZmqKvEventPublisher.binds("tcp://*:5557")).isTrue();
    assertThat(ZmqKvEventPublisher.binds("tcp://[::]:5557")).isTrue();
    assertThat(ZmqKvEventPublisher.binds("ipc:///tmp/kv")).isTrue();
    assertThat(ZmqKvEventPublisher.binds("inproc://kv")).isTrue();
    assertThat(ZmqKvEventPublisher.binds("tcp://10.0.0.1:5557")).isFalse();
  }
}
