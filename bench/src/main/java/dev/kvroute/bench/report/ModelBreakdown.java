package dev.kvroute.bench.report;

import dev.kvroute.bench.workload.ModelPlan;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One run's figures broken down by model: per base model, split into requests for the base model
 * itself and requests run with one of its LoRA adapters, and over all requests. A request's model is
 * its session's {@link ModelPlan.Binding}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param label the run's name ({@code cache-aware, lora-affinity on})
 * @param groups the groups in report order: {@code model-a}, {@code model-b}, {@code model-b
 *     adapters}..., then {@code all}
 */
public record ModelBreakdown(String label, List<Group> groups) {
  /**
   * The figures of one group of requests.
   *
   * @param name the base model, with {@code " (adapters)"} for its adapter requests, or {@code all}
   * @param requests requests in the group
   * @param hitRate cached prompt tokens over prompt tokens, in [0, 1]
   * @param meanTtftSeconds mean time to first token, model seconds
   * @param p90TtftSeconds 90th percentile of the TTFT (nearest rank), model seconds
   */
  public record Group(String name, int requests, double hitRate, double meanTtftSeconds, double p90TtftSeconds) {}

  public ModelBreakdown {
    groups = List.copyOf(groups);
  }

  /** The group named {@code name}, or {@code null}. */
  public Group group(String name) {
    for (Group g : groups) {
      if (g.name().equals(name)) {
        return g;
      }
    }
    return null;
  }

  /**
   * The breakdown of {@code records} (finished requests of one run) by the model {@code plan} binds
   * each one's session to.
   */
  public static ModelBreakdown of(String label, ModelPlan plan, List<RequestRecord> records) {
    Map<String, List<RequestRecord>> byGroup = new LinkedHashMap<>();
    for (String base : new java.util.TreeSet<>(plan.replicaModels())) {
      byGroup.put(base, new ArrayList<>());
      byGroup.put(adapters(base), new ArrayList<>());
    }
    for (RequestRecord r : records) {
      ModelPlan.Binding b = plan.binding(r.session());
      byGroup.get(b.adapter() == null ? b.base() : adapters(b.base())).add(r);
    }
    List<Group> groups = new ArrayList<>();
    for (Map.Entry<String, List<RequestRecord>> e : byGroup.entrySet()) {
      if (!e.getValue().isEmpty()) {
        groups.add(group(e.getKey(), e.getValue()));
      }
    }
    groups.add(group("all", records));
    return new ModelBreakdown(label, groups);
  }

  /** The group name of base model {@code base}'s adapter requests. */
  public static String adapters(String base) {
    return base + " (adapters)";
  }

  private static Group group(String name, List<RequestRecord> records) {
    long prompt = 0;
    long cached = 0;
    double ttft = 0;
    double[] ttfts = new double[records.size()];
    for (int i = 0; i < records.size(); i++) {
      RequestRecord r = records.get(i);
      prompt += r.promptTokens();
      cached += r.cachedTokens();
      ttft += r.ttftSeconds();
      ttfts[i] = r.ttftSeconds();
    }
    java.util.Arrays.sort(ttfts);
    double p90 = ttfts.length == 0 ? 0 : ttfts[Math.max(0, (int) Math.ceil(0.9 * ttfts.length) - 1)];
    return new Group(
        name, records.size(), prompt == 0 ? 0 : (double) cached / prompt, records.isEmpty() ? 0 : ttft / records.size(),
        p90);
  }

  /** The runs side by side: one row per run and group. */
  public static TextTable table(List<ModelBreakdown> runs) {
    TextTable t = new TextTable(List.of("run", "model", "requests", "hit rate", "mean TTFT s", "p90 TTFT s"));
    for (ModelBreakdown b : runs) {
      for (Group g : b.groups()) {
        t.row(
            List.of(
                b.label(), g.name(), Integer.toString(g.requests()), String.format(Locale.ROOT, "%.3f", g.hitRate()),
                String.format(Locale.ROOT, "%.3f", g.meanTtftSeconds()),
                String.format(Locale.ROOT, "%.3f", g.p90TtftSeconds())));
      }
    }
    return t;
  }
}
