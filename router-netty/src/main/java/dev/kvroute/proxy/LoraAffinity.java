package dev.kvroute.proxy;

import dev.kvroute.core.exposition.PrometheusText;
import dev.kvroute.core.exposition.Sample;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * Prefers, for a request run with a LoRA adapter, the replicas that have the adapter running, as
 * llm-d's {@code lora-affinity-scorer} scores them: the adapter running there 1.0; a free adapter slot
 * to load it 0.8; the adapter already waiting there 0.6; otherwise 0 (every slot busy with other
 * adapters: the request would wait for one). A replica whose adapter state was never read scores 0.8.
 * The state comes from vLLM's {@code vllm:lora_requests_info} gauge ({@code running_lora_adapters},
 * {@code waiting_lora_adapters}, {@code max_lora}), read by the engine-load scrape.
 *
 * <p>The candidates every policy then chooses among are the best-scoring ones, unless their lightest
 * load exceeds the lightest load of all candidates by more than {@code maxExtraInFlight} requests: an
 * adapter stays on the replicas running it until they are that much busier than another that could
 * load it (then every candidate stays, and the policy balances).
 *
 * <p>The simulator applies the same rule to its engine models' adapter slots ({@link #prefer(List,
 * String, Function, ToIntFunction, long)}).
 *
 * <p>Stateless and thread-safe.
 */
public final class LoraAffinity {
  /** vLLM's gauge of the adapters running and waiting, in its labels. */
  static final String INFO_METRIC = "vllm:lora_requests_info";

  /**
   * What a replica reported of its adapters.
   *
   * @param running adapters with requests running
   * @param waiting adapters with requests waiting
   * @param maxLoras adapters that can run at once
   */
  public record State(Set<String> running, Set<String> waiting, int maxLoras) {
    /** Nothing read: every adapter scores as if a slot were free. */
    public static final State UNKNOWN = new State(Set.of(), Set.of(), -1);
  }

  private LoraAffinity() {}

  /**
   * The state in a Prometheus text exposition's {@code vllm:lora_requests_info} line, or
   * {@link State#UNKNOWN} when it has none (no LoRA, or not vLLM). Each engine's latest line is read
   * (see {@link #state}).
   */
  static State parse(String metricsText) {
    return state(PrometheusText.samples(metricsText, INFO_METRIC::equals));
  }

  /**
   * The state in {@code vllm:lora_requests_info} samples (labels {@code running_lora_adapters},
   * {@code waiting_lora_adapters}: comma-separated names; {@code max_lora}: a count, an unreadable one
   * counting as 1), or {@link State#UNKNOWN} when there are none with labels.
   *
   * <p>vLLM sets this gauge, whose value is the unix time of the sample, on a new series for every
   * new combination of labels and never removes the old ones: its exposition keeps one line per
   * combination ever seen, and only the one with the largest value is the current state (GAIE's
   * metrics scraper reads it the same way, {@code getLatestLoraMetric}). So, per engine (the {@code
   * engine} label of a data-parallel server; one group without it), the latest line is read; the
   * engines' latest lines are then merged, their slots added.
   */
  static State state(List<Sample> info) {
    Map<String, Sample> latest = new java.util.LinkedHashMap<>();
    for (Sample s : info) {
      if (s.labels().isEmpty()) {
        continue; // vLLM's info gauge always has labels: this is not it
      }
      String engine = s.label("engine");
      latest.merge(engine == null ? "" : engine, s, (a, b) -> b.value() > a.value() ? b : a);
    }
    if (latest.isEmpty()) {
      return State.UNKNOWN;
    }
    Set<String> running = new java.util.TreeSet<>();
    Set<String> waiting = new java.util.TreeSet<>();
    int max = 0;
    for (Sample s : latest.values()) {
      String r = s.label("running_lora_adapters");
      String w = s.label("waiting_lora_adapters");
      String m = s.label("max_lora");
      if (r != null) {
        running.addAll(names(r));
      }
      if (w != null) {
        waiting.addAll(names(w));
      }
      if (m != null) {
        try {
          max += Integer.parseInt(m);
        } catch (NumberFormatException e) {
          // an unreadable slot count: treat as one slot
          max += 1;
        }
      }
    }
    return new State(Set.copyOf(running), Set.copyOf(waiting), max);
  }

  private static List<String> names(String csv) {
    return csv.isEmpty() ? List.of() : Arrays.stream(csv.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
  }

  /** llm-d's lora-affinity score of {@code adapter} on a replica in state {@code s}. */
  public static double score(State s, String adapter) {
    if (s.maxLoras() < 0) {
      return 0.8;
    }
    if (s.running().contains(adapter)) {
      return 1.0;
    }
    if (s.running().size() < s.maxLoras()) {
      return 0.8;
    }
    if (s.waiting().contains(adapter)) {
      return 0.6;
    }
    return 0.0;
  }

  /**
   * The candidates for {@code adapter}: the best-scoring ones unless they are more than
   * {@code maxExtraInFlight} requests busier than the least-loaded candidate (see the class doc).
   * {@code candidates} itself when the adapter is {@code null}, there is one candidate, or all score
   * the same.
   */
  static List<Backend> prefer(List<Backend> candidates, String adapter, ToIntFunction<Backend> inFlight,
      long maxExtraInFlight) {
    return prefer(candidates, adapter, Backend::lora, inFlight, maxExtraInFlight);
  }

  /**
   * As {@link #prefer(List, String, ToIntFunction, long)} for any kind of candidate, whose adapter state
   * is {@code state}'s: the simulator's replicas, whose state is read from their engine models' slots.
   */
  public static <T> List<T> prefer(List<T> candidates, String adapter, Function<T, State> state,
      ToIntFunction<T> inFlight, long maxExtraInFlight) {
    if (adapter == null || candidates.size() < 2) {
      return candidates;
    }
    double best = -1;
    double worst = 2;
    for (T b : candidates) {
      double s = score(state.apply(b), adapter);
      best = Math.max(best, s);
      worst = Math.min(worst, s);
    }
    if (best == worst) {
      return candidates;
    }
    List<T> top = new ArrayList<>();
    int minAll = Integer.MAX_VALUE;
    int minTop = Integer.MAX_VALUE;
    for (T b : candidates) {
      int load = inFlight.applyAsInt(b);
      minAll = Math.min(minAll, load);
      if (score(state.apply(b), adapter) == best) {
        top.add(b);
        minTop = Math.min(minTop, load);
      }
    }
    return (long) minTop - minAll > maxExtraInFlight ? candidates : top;
  }
}
