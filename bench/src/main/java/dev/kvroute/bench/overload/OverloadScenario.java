package dev.kvroute.bench.overload;

import dev.kvroute.bench.sim.AdmissionLimits;
import dev.kvroute.bench.sim.FleetEngines;
import dev.kvroute.bench.trace.BlockTokens;
import dev.kvroute.bench.workload.FleetSpec;
import dev.kvroute.bench.workload.OverloadWorkload;
import dev.kvroute.bench.workload.OverloadWorkload.Stream;
import java.util.List;
import java.util.Locale;

/**
 * The overload scenarios of issue 16, each a loaded workload, the baseline it is compared with, and
 * the router's admission limits, in model time. Every scenario runs on replicas of the explainer's
 * engine ({@code fcfs-prefill}, 15,000 prefill tokens/s plus 0.02 s per request, 30 decode tokens/s
 * per request, 16-token blocks, 2^18 tokens of KV) behind a router giving each at most
 * {@value #PER_BACKEND} requests at once; replies average 30 tokens (one second of decode), so a
 * request holds its slot for about its prefill plus a second.
 *
 * <ul>
 *   <li>{@code overload-2x}, {@code overload-4x}: two replicas (about 8 requests/s); four tenants' chat
 *       streams (1,500-token prompts whose first 1,000 tokens are the tenant's system prompt) at 2 and 4
 *       times a base rate of 5.5 requests/s (about 70% of the fleet), a queue of 32 and a 3 s deadline.
 *       The baseline is the base rate.
 *   <li>{@code priority-flood}: two replicas; a high-priority stream (priority -1; 4,000-token prompts,
 *       0.5/s) beside a low-priority flood (priority 10; 200-token prompts, 30/s, four times what the
 *       fleet serves), queue 64, deadline 3 s. The baseline is the high-priority stream alone.
 *   <li>{@code tenants}: four replicas (about 15 requests/s); a heavy tenant at 20 requests/s (300-token
 *       prompts, 200 of them its system prompt) beside a light one at 2/s (4,000-token prompts), queue
 *       64, deadline 3 s. The baseline is the light tenant alone.
 * </ul>
 *
 * <p>Why these shapes: without preemption, a request that arrives while every slot is busy waits for
 * the next slot to free (the slot holding time over the fleet's slots, 1 s / 8 to 1 s / 16 here), then
 * for the prefills ahead of it in its engine's FCFS queue. A high-priority or light-tenant TTFT within
 * 2x of its unloaded value therefore needs that TTFT to be large next to the slot turnover: with
 * 4,000-token prompts (0.29 s of prefill) it is; with a tenant whose prompts are mostly cached (0.05 s)
 * the turnover alone is 2x (the simulator gives 3x for the light tenant of two-replica chat streams).
 * Without priority or fairness, the focus stream would wait in the queue behind the flood or the heavy
 * tenant's backlog, up to the 3 s deadline.
 *
 * @param name the scenario's name (as {@code --scenario} takes it)
 * @param limits the router's admission settings
 * @param loaded the scenario's workload
 * @param baseline the workload its figures are compared with
 * @param focus the stream whose TTFT the scenario checks ({@code null}: every request)
 */
public record OverloadScenario(
    String name, AdmissionLimits limits, OverloadWorkload loaded, OverloadWorkload baseline, String focus) {
  /** The scenario names, in the order the command runs them. */
  public static final List<String> NAMES = List.of("overload-2x", "overload-4x", "priority-flood", "tenants");

  /** Requests in flight per backend. */
  public static final int PER_BACKEND = 4;

  /** The fleet of every scenario. */
  public static FleetSpec fleet(int replicas) {
    return new FleetSpec(replicas, 1 << 18, 16, 15_000, 0.02, 30);
  }

  /**
   * Builds scenario {@code name} over {@code durationSeconds} of model time.
   *
   * @throws IllegalArgumentException for an unknown name
   */
  public static OverloadScenario of(String name, double durationSeconds, long seed, BlockTokens blocks) {
    FleetSpec fleet = fleet(2);
    var engine = FleetEngines.config(fleet);
    switch (name) {
      case "overload-2x", "overload-4x" -> {
        double factor = name.endsWith("2x") ? 2 : 4;
        List<Stream> base = List.of(
            chat("tenant-a", 5.5 / 4), chat("tenant-b", 5.5 / 4), chat("tenant-c", 5.5 / 4), chat("tenant-d", 5.5 / 4));
        List<Stream> loaded = base.stream().map(s -> s.scaled(factor)).toList();
        return new OverloadScenario(name, new AdmissionLimits(PER_BACKEND, 32, 3),
            OverloadWorkload.generate(name, fleet, engine, loaded, durationSeconds, seed, blocks),
            OverloadWorkload.generate("base", fleet, engine, base, durationSeconds, seed, blocks), null);
      }
      case "priority-flood" -> {
        Stream high = new Stream("high", 0.5, -1, "interactive", 4000, 0, 30);
        Stream flood = new Stream("flood", 30, 10, "batch", 200, 0, 30);
        return new OverloadScenario(name, new AdmissionLimits(PER_BACKEND, 64, 3),
            OverloadWorkload.generate(name, fleet, engine, List.of(high, flood), durationSeconds, seed, blocks),
            OverloadWorkload.generate("high alone", fleet, engine, List.of(high), durationSeconds, seed, blocks),
            "high");
      }
      case "tenants" -> {
        fleet = fleet(4);
        engine = FleetEngines.config(fleet);
        Stream light = new Stream("light", 2, 0, "light", 4000, 0, 30);
        Stream heavy = new Stream("heavy", 20, 0, "heavy", 300, 200, 30);
        return new OverloadScenario(name, new AdmissionLimits(PER_BACKEND, 64, 3),
            OverloadWorkload.generate(name, fleet, engine, List.of(light, heavy), durationSeconds, seed, blocks),
            OverloadWorkload.generate("light alone", fleet, engine, List.of(light), durationSeconds, seed, blocks),
            "light");
      }
      default -> throw new IllegalArgumentException(
          "scenario: " + name + " (expected: one of " + String.join(", ", NAMES) + ")");
    }
  }

  /** A tenant's chat stream: 1,500-token prompts starting with its 1,000-token system prompt, 30-token replies. */
  private static Stream chat(String tenant, double rate) {
    return new Stream(tenant, rate, 0, tenant, 1500, 1000, 30);
  }

  /** A one-line description for reports. */
  public String describe() {
    StringBuilder sb = new StringBuilder();
    for (Stream s : loaded.streams()) {
      if (!sb.isEmpty()) {
        sb.append("; ");
      }
      sb.append(String.format(Locale.ROOT, "%s %.2f/s p=%d %d+%d tok", s.name(), s.ratePerSecond(), s.priority(),
          s.promptTokens(), s.maxTokens()));
    }
    return String.format(Locale.ROOT, "%s: %s; limit %d/backend, queue %d, deadline %.1f s", name, sb,
        limits.perBackend(), limits.maxQueueLength(), limits.deadlineSeconds());
  }
}
