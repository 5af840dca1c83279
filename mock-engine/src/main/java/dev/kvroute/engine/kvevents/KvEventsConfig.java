package dev.kvroute.engine.kvevents;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * How a mock engine publishes its KV events: vLLM's {@code KVEventsConfig} ({@code
 * vllm/config/kv_events.py}, given as JSON to {@code --kv-events-config}) plus the two choices vLLM
 * makes by version and environment ({@link KvEventLayout}, {@link BlockHashFormat}).
 *
 * <p>Immutable and thread-safe.
 *
 * @param enableKvCacheEvents whether the engine records events at all ({@code enable_kv_cache_events})
 * @param publisher {@code "zmq"} or {@code "null"} ({@code publisher}; when the JSON leaves it out,
 *     {@code "zmq"} if events are enabled, else {@code "null"}, as current vLLM)
 * @param endpoint the PUB socket's address ({@code endpoint}, default {@code tcp://*:5557}); bound if
 *     it contains {@code *} or {@code ::} or is {@code ipc://} or {@code inproc://}, connected
 *     otherwise (vLLM's rule). {@code tcp://127.0.0.1:*} binds an ephemeral port.
 * @param replayEndpoint the ROUTER socket answering replay requests ({@code replay_endpoint}), always
 *     bound; null for none (vLLM's default)
 * @param bufferSteps batches kept for replay ({@code buffer_steps}, default 10000)
 * @param hwm the PUB socket's send high-water mark in messages ({@code hwm}, default 100000)
 * @param maxQueueSize batches waiting for the publisher thread before {@code publish} blocks ({@code
 *     max_queue_size}, default 100000)
 * @param topic the first frame of every message, UTF-8 ({@code topic}, default empty)
 * @param layout the field layout (not in vLLM's JSON: {@code --kv-events-layout}; default current)
 * @param blockHashFormat hashes as ints or bytes (not in vLLM's JSON: vLLM reads {@code
 *     VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES}; here {@code --kv-events-block-hashes}; default int)
 */
public record KvEventsConfig(
    boolean enableKvCacheEvents,
    String publisher,
    String endpoint,
    String replayEndpoint,
    int bufferSteps,
    int hwm,
    int maxQueueSize,
    String topic,
    KvEventLayout layout,
    BlockHashFormat blockHashFormat) {

  /** vLLM's default PUB endpoint. */
  public static final String DEFAULT_ENDPOINT = "tcp://*:5557";

  /** Events off (vLLM's default). */
  public static final KvEventsConfig DISABLED = new KvEventsConfig(
      false, "null", DEFAULT_ENDPOINT, null, 10_000, 100_000, 100_000, "", KvEventLayout.CURRENT, BlockHashFormat.INT);

  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final List<String> FIELDS = List.of("enable_kv_cache_events", "publisher", "endpoint",
      "replay_endpoint", "buffer_steps", "hwm", "max_queue_size", "topic");

  public KvEventsConfig {
    Objects.requireNonNull(publisher, "publisher");
    Objects.requireNonNull(endpoint, "endpoint");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(layout, "layout");
    Objects.requireNonNull(blockHashFormat, "blockHashFormat");
    if (!publisher.equals("zmq") && !publisher.equals("null")) {
      throw new IllegalArgumentException("publisher: " + publisher + " (expected: \"zmq\" or \"null\")");
    }
    checkEndpoint("endpoint", endpoint);
    if (replayEndpoint != null) {
      checkEndpoint("replay_endpoint", replayEndpoint);
    }
    if (bufferSteps < 1) {
      throw new IllegalArgumentException("buffer_steps: " + bufferSteps + " (expected: >= 1)");
    }
    if (hwm < 0) {
      throw new IllegalArgumentException("hwm: " + hwm + " (expected: >= 0; 0 means no limit)");
    }
    if (maxQueueSize < 1) {
      throw new IllegalArgumentException("max_queue_size: " + maxQueueSize + " (expected: >= 1)");
    }
  }

  private static void checkEndpoint(String name, String endpoint) {
    if (!endpoint.startsWith("tcp://") && !endpoint.startsWith("ipc://") && !endpoint.startsWith("inproc://")) {
      throw new IllegalArgumentException(
          name + ": " + endpoint + " (expected: tcp://HOST:PORT, ipc://PATH or inproc://NAME)");
    }
  }

  /** Whether the engine publishes: events enabled and a {@code zmq} publisher (vLLM's factory rule). */
  public boolean publishes() {
    return enableKvCacheEvents && publisher.equals("zmq");
  }

  /**
   * Publishing on loopback with ephemeral ports: a PUB socket at {@code tcp://127.0.0.1:*} and a
   * replay socket at another; read the bound addresses from the running engine. For tests.
   */
  public static KvEventsConfig ephemeral(KvEventLayout layout, BlockHashFormat format) {
    return new KvEventsConfig(true, "zmq", "tcp://127.0.0.1:*", "tcp://127.0.0.1:*", 10_000, 100_000, 100_000,
        "kv-events", layout, format);
  }

  /**
   * vLLM's {@code --kv-events-config} JSON, with this layout and hash format.
   *
   * @throws IllegalArgumentException if the JSON is not an object, has a field vLLM's {@code
   *     KVEventsConfig} does not have, or a value of the wrong type or out of range (the message names
   *     the field and what was expected)
   */
  public static KvEventsConfig parse(String json, KvEventLayout layout, BlockHashFormat format) {
    JsonNode root;
    try {
      root = MAPPER.readTree(json);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("--kv-events-config: not JSON (" + e.getOriginalMessage() + ")", e);
    }
    if (root == null || !root.isObject()) {
      throw new IllegalArgumentException("--kv-events-config: " + json + " (expected: a JSON object such as "
          + "{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", \"endpoint\": \"tcp://*:5557\"})");
    }
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      String name = it.next().getKey();
      if (!FIELDS.contains(name)) {
        throw new IllegalArgumentException("--kv-events-config: unknown field " + name + " (expected one of " + FIELDS + ")");
      }
    }
    boolean enabled = bool(root, "enable_kv_cache_events", false);
    String publisher = string(root, "publisher", null);
    return new KvEventsConfig(
        enabled,
        publisher != null ? publisher : (enabled ? "zmq" : "null"),
        string(root, "endpoint", DEFAULT_ENDPOINT),
        string(root, "replay_endpoint", null),
        integer(root, "buffer_steps", 10_000),
        integer(root, "hwm", 100_000),
        integer(root, "max_queue_size", 100_000),
        string(root, "topic", ""),
        layout,
        format);
  }

  /**
   * This configuration for replica (or data-parallel rank) {@code rank}: vLLM's {@code
   * offset_endpoint_port}: a {@code tcp://} endpoint's port plus {@code rank} (unless the port is the
   * wildcard {@code *}), an {@code inproc://} name with {@code _dp<rank>} appended; rank 0 unchanged.
   */
  public KvEventsConfig forRank(int rank) {
    return new KvEventsConfig(enableKvCacheEvents, publisher, offsetEndpointPort(endpoint, rank),
        replayEndpoint == null ? null : offsetEndpointPort(replayEndpoint, rank), bufferSteps, hwm, maxQueueSize,
        topic, layout, blockHashFormat);
  }

  /** vLLM's {@code ZmqEventPublisher.offset_endpoint_port}; see {@link #forRank}. */
  static String offsetEndpointPort(String endpoint, int rank) {
    if (rank == 0) {
      return endpoint;
    }
    if (endpoint.contains("inproc")) {
      return endpoint + "_dp" + rank;
    }
    if (endpoint.startsWith("tcp://")) {
      int colon = endpoint.lastIndexOf(':');
      String port = endpoint.substring(colon + 1);
      if (colon <= "tcp:/".length() || port.equals("*")) {
        return endpoint;
      }
      try {
        return endpoint.substring(0, colon + 1) + (Integer.parseInt(port) + rank);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("endpoint: " + endpoint + " (expected: a numeric port or *)", e);
      }
    }
    return endpoint;
  }

  private static boolean bool(JsonNode root, String name, boolean dflt) {
    JsonNode n = root.get(name);
    if (n == null || n.isNull()) {
      return dflt;
    }
    if (!n.isBoolean()) {
      throw new IllegalArgumentException("--kv-events-config: " + name + ": " + n + " (expected: true or false)");
    }
    return n.booleanValue();
  }

  private static String string(JsonNode root, String name, String dflt) {
    JsonNode n = root.get(name);
    if (n == null || n.isNull()) {
      return dflt;
    }
    if (!n.isTextual()) {
      throw new IllegalArgumentException("--kv-events-config: " + name + ": " + n + " (expected: a string)");
    }
    return n.textValue();
  }

  private static int integer(JsonNode root, String name, int dflt) {
    JsonNode n = root.get(name);
    if (n == null || n.isNull()) {
      return dflt;
    }
    if (!n.isIntegralNumber() || !n.canConvertToInt()) {
      throw new IllegalArgumentException("--kv-events-config: " + name + ": " + n + " (expected: an integer)");
    }
    return n.intValue();
  }
}
