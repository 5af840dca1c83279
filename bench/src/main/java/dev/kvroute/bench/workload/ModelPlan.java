package dev.kvroute.bench.workload;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * Which model each replica serves and which model or LoRA adapter each session runs with, for the
 * multi-model workload: the seed workload's sessions, each bound to one base model or one adapter of
 * a base model (its requests name the adapter as their {@code model}, as vLLM serves adapters), on
 * replica sets that serve one base model each.
 *
 * <p>Immutable and thread-safe.
 *
 * @param replicaModels the base model of each replica, in fleet order
 * @param sessions each session's binding, by session index
 * @param maxLoras adapters active at once on a replica (vLLM's {@code --max-loras}), {@code >= 1}
 * @param loraLoadSeconds model time to load an adapter into a free slot, {@code >= 0}
 */
public record ModelPlan(List<String> replicaModels, List<Binding> sessions, int maxLoras, double loraLoadSeconds) {
  /**
   * A session's model.
   *
   * @param base the base model
   * @param adapter the LoRA adapter, or {@code null} for the base model
   */
  public record Binding(String base, String adapter) {
    public Binding {
      Objects.requireNonNull(base, "base");
    }

    /** The {@code model} field of the session's requests: the adapter's name, else the base model's. */
    public String served() {
      return adapter == null ? base : adapter;
    }
  }

  public ModelPlan {
    replicaModels = List.copyOf(replicaModels);
    sessions = List.copyOf(sessions);
    if (maxLoras < 1) {
      throw new IllegalArgumentException("maxLoras: " + maxLoras + " (expected: >= 1)");
    }
    if (!(loraLoadSeconds >= 0)) {
      throw new IllegalArgumentException("loraLoadSeconds: " + loraLoadSeconds + " (expected: >= 0)");
    }
  }

  /** Model A of the multi-model workload (no adapters). */
  public static final String MODEL_A = "model-a";

  /** Model B of the multi-model workload (with adapters {@code model-b-lora-1..N}). */
  public static final String MODEL_B = "model-b";

  /**
   * The multi-model scenario over {@code sessions} sessions and {@code replicas} replicas: the first
   * half of the replicas serve {@link #MODEL_A}, the rest {@link #MODEL_B}; a session runs with model A
   * with probability 1/2, else with model B, whose sessions run with one of {@code adapters} adapters
   * ({@code model-b-lora-k}, picked with Zipf popularity of exponent 1: weight 1/k) with probability
   * {@code 1 - baseShareOfB}, else with model B itself. Deterministic for a seed.
   *
   * @throws IllegalArgumentException if {@code replicas < 2}, {@code adapters < 1} or {@code baseShareOfB}
   *     is outside [0, 1]
   */
  public static ModelPlan twoModels(
      int replicas, int sessions, int adapters, double baseShareOfB, int maxLoras, double loraLoadSeconds, long seed) {
    if (replicas < 2) {
      throw new IllegalArgumentException("replicas: " + replicas + " (expected: >= 2, half per model)");
    }
    if (adapters < 1) {
      throw new IllegalArgumentException("adapters: " + adapters + " (expected: >= 1)");
    }
    if (!(baseShareOfB >= 0 && baseShareOfB <= 1)) {
      throw new IllegalArgumentException("baseShareOfB: " + baseShareOfB + " (expected: in [0, 1])");
    }
    List<String> models = new ArrayList<>(replicas);
    for (int i = 0; i < replicas; i++) {
      models.add(i < replicas / 2 ? MODEL_A : MODEL_B);
    }
    double[] cumulative = new double[adapters];
    double total = 0;
    for (int k = 0; k < adapters; k++) {
      total += 1.0 / (k + 1);
      cumulative[k] = total;
    }
    SplittableRandom random = new SplittableRandom(seed ^ 0x6d6f64656c73L);
    List<Binding> bindings = new ArrayList<>(sessions);
    for (int s = 0; s < sessions; s++) {
      if (random.nextDouble() < 0.5) {
        bindings.add(new Binding(MODEL_A, null));
      } else if (random.nextDouble() < baseShareOfB) {
        bindings.add(new Binding(MODEL_B, null));
      } else {
        double u = random.nextDouble() * total;
        int k = 0;
        while (k < adapters - 1 && cumulative[k] <= u) {
          k++;
        }
        bindings.add(new Binding(MODEL_B, adapterName(k + 1)));
      }
    }
    return new ModelPlan(models, bindings, maxLoras, loraLoadSeconds);
  }

  /** Adapter {@code k} (from 1) of model B. */
  public static String adapterName(int k) {
    return MODEL_B + "-lora-" + k;
  }

  /** Session {@code index}'s binding. */
  public Binding binding(int index) {
    return sessions.get(index);
  }

  /** The binding of the model a request names ({@link Binding#served()}), or {@code null} if none. */
  public Binding resolve(String served) {
    for (Binding b : sessions) {
      if (b.served().equals(served)) {
        return b;
      }
    }
    return null;
  }

  /** Indices of the replicas serving base model {@code base}, in fleet order. */
  public List<Integer> replicasOf(String base) {
    List<Integer> out = new ArrayList<>();
    for (int i = 0; i < replicaModels.size(); i++) {
      if (replicaModels.get(i).equals(base)) {
        out.add(i);
      }
    }
    return out;
  }
}
