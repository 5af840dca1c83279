package dev.kvroute.bench.cli;

import dev.kvroute.bench.workload.ModelPlan;
import picocli.CommandLine.Option;

/**
 * The flags of {@code --workload multi-model}: the seed workload's sessions on two base models, half
 * the replicas each, model B's sessions mostly run with one of its LoRA adapters of Zipf popularity
 * (see {@link ModelPlan#twoModels}). The sessions themselves come from the seed workload's flags.
 *
 * <p>Not thread-safe (a picocli mixin).
 */
public final class MultiModelOptions {
  @Option(names = "--adapters", paramLabel = "N", description = "multi-model: LoRA adapters of model B, Zipf popularity (default: ${DEFAULT-VALUE}).")
  int adapters = 8;

  @Option(names = "--base-share-of-b", paramLabel = "P", description = "multi-model: share of model B's sessions run with the base model, not an adapter (default: ${DEFAULT-VALUE}).")
  double baseShareOfB = 0.2;

  @Option(names = "--max-loras", paramLabel = "N", description = "multi-model: adapters active at once on an engine, vLLM's --max-loras (default: ${DEFAULT-VALUE}).")
  int maxLoras = 2;

  @Option(names = "--lora-load-seconds", paramLabel = "SECONDS", description = "multi-model: model time to load an adapter into a slot (default: ${DEFAULT-VALUE}).")
  double loraLoadSeconds = 0.5;

  @Option(names = "--lora-scrape-seconds", paramLabel = "SECONDS", description = "multi-model: model seconds between the router's reads of the engines' adapter slots (vllm:lora_requests_info, read by its engine-load scrape: serve's --engine-load-interval times the engines' time scale); 0 = the simulator reads them live (default: ${DEFAULT-VALUE}, serve's default on a real fleet).")
  double loraScrapeSeconds = 1;

  @Option(names = "--dump-requests", paramLabel = "FILE", description = "multi-model, real runs: write every request of every real run and of its exact simulated run as CSV (run, side, session, turn, model, adapter, sent, replica, TTFT in model seconds, prompt and cached tokens), to compare them request by request.")
  java.nio.file.Path dumpRequests;

  /**
   * The plan over {@code replicas} replicas and {@code sessions} sessions.
   *
   * @throws IllegalArgumentException if a value is out of range (the message says which)
   */
  ModelPlan plan(int replicas, int sessions, long seed) {
    return ModelPlan.twoModels(replicas, sessions, adapters, baseShareOfB, maxLoras, loraLoadSeconds, seed);
  }
}
