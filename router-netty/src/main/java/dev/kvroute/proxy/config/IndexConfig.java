package dev.kvroute.proxy.config;

import java.time.Duration;
import java.util.Set;

/**
 * Where the prefix index learns what each engine caches: predicted from what the router routed, or
 * known from the engines' KV events (vLLM's ZMQ publisher, {@code --kv-events-config}).
 *
 * <ul>
 *   <li>{@code approximate}: prediction only (the radix index); each response's {@code cached_tokens}
 *       corrects it. No subscriptions.
 *   <li>{@code precise}: every backend's events, from its {@code kvEvents} endpoint or
 *       {@code tcp://HOST:kvEventsPort}; a backend whose events have not started, stopped, or cannot be
 *       mapped to pages is served from the approximate view meanwhile.
 *   <li>{@code hybrid}: events from the backends that name a {@code kvEvents} endpoint, prediction for
 *       the others.
 * </ul>
 *
 * <p>Immutable and thread-safe.
 *
 * @param mode {@code approximate} (default), {@code precise} or {@code hybrid}
 * @param kvEventsPort the port of a backend's PUB socket when its {@code kvEvents} endpoint is not
 *     given, in precise mode (vLLM's default {@code endpoint} is {@code tcp://*:5557}). Default 5557
 * @param kvEventsReplayPort the port of a backend's replay ROUTER socket when its
 *     {@code kvEventsReplay} endpoint is not given; {@code 0} (default): no replay, so a gap clears the
 *     view
 * @param topic the topic prefix subscribed to; empty (default, vLLM's default topic) takes every message
 * @param speculativeTtl how long a routed prompt counts as held on the chosen backend before its events
 *     confirm it (llm-d's 2s); {@code 0s} turns speculation off. Default 2s
 * @param staleAfter a backend with requests routed to it and no event for this long falls back to the
 *     approximate view until its next event. Default 30s
 * @param replayTimeout the longest wait for a replay's answer (the request is sent twice, on two
 *     connections, before the view is cleared instead). Default 2s
 * @param correctFromUsage whether a served response's {@code usage.prompt_tokens_details.cached_tokens}
 *     corrects the backend's approximate view when it is below the prediction ({@link
 *     dev.kvroute.core.index.UsageCorrection}); in the event modes it corrects the approximate view the
 *     backends fall back to. Default true
 */
public record IndexConfig(
    String mode,
    int kvEventsPort,
    int kvEventsReplayPort,
    String topic,
    Duration speculativeTtl,
    Duration staleAfter,
    Duration replayTimeout,
    boolean correctFromUsage) {
  /** The accepted modes. */
  public static final Set<String> MODES = Set.of("approximate", "precise", "hybrid");

  public IndexConfig {
    Checks.notNull("mode", mode, "approximate, precise or hybrid");
    if (!MODES.contains(mode)) {
      throw new IllegalArgumentException("mode: " + mode + " (expected: approximate, precise or hybrid)");
    }
    Checks.range("kvEventsPort", kvEventsPort, 1, 65_535);
    Checks.range("kvEventsReplayPort", kvEventsReplayPort, 0, 65_535);
    Checks.notNull("topic", topic, "a topic prefix (empty for every message)");
    Checks.notNull("speculativeTtl", speculativeTtl, "a duration");
    if (speculativeTtl.isNegative()) {
      throw new IllegalArgumentException("speculativeTtl: " + Durations.format(speculativeTtl) + " (expected: >= 0s)");
    }
    Checks.positive("staleAfter", staleAfter);
    Checks.positive("replayTimeout", replayTimeout);
  }

  /** Approximate mode; for the event modes, port 5557, no replay port, every topic, 2s, 30s, 2s. */
  public static IndexConfig defaults() {
    return new IndexConfig("approximate", 5557, 0, "", Duration.ofSeconds(2), Duration.ofSeconds(30),
        Duration.ofSeconds(2), true);
  }

  /** Whether any backend may be subscribed to ({@code precise} or {@code hybrid}). */
  public boolean usesEvents() {
    return !mode.equals("approximate");
  }

  /** A copy in {@code mode}. */
  public IndexConfig withMode(String mode) {
    return new IndexConfig(mode, kvEventsPort, kvEventsReplayPort, topic, speculativeTtl, staleAfter, replayTimeout,
        correctFromUsage);
  }

  /** A copy with the usage correction on or off. */
  public IndexConfig withCorrectFromUsage(boolean on) {
    return new IndexConfig(mode, kvEventsPort, kvEventsReplayPort, topic, speculativeTtl, staleAfter, replayTimeout, on);
  }
}
