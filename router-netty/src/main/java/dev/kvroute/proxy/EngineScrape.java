package dev.kvroute.proxy;

import dev.kvroute.core.exposition.PrometheusText;
import dev.kvroute.core.exposition.Sample;
import dev.kvroute.core.load.EngineLoad;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What the router reads from an engine's {@code /metrics} (a Prometheus text exposition, read by
 * {@link PrometheusText} in one pass): its load, its process start time, its KV capacity and its LoRA
 * adapters.
 *
 * <ul>
 *   <li>Load: vLLM's {@code vllm:num_requests_running}, {@code vllm:num_requests_waiting}, {@code
 *       vllm:kv_cache_usage_perc} (or the older {@code vllm:gpu_cache_usage_perc}), else SGLang's
 *       {@code sglang:num_running_reqs}, {@code sglang:num_queue_reqs}, {@code sglang:token_usage}.
 *       Series with several label sets (data-parallel engines) are summed, KV usage averaged and
 *       clamped to 1; negative, infinite and NaN values are skipped.
 *   <li>Start time: {@code process_start_time_seconds} (prometheus_client's process collector, in
 *       vLLM's exposition), the first sample, when positive and finite.
 *   <li>Capacity: vLLM's {@code vllm:cache_config_info{num_gpu_blocks="N",block_size="B"}} gives
 *       {@code N × B} tokens (the first sample with both numeric), else SGLang's {@code
 *       sglang:max_total_num_tokens} (the first sample, when at least 1 and finite).
 *   <li>Adapters: vLLM's {@code vllm:lora_requests_info} ({@link LoraAffinity#state}).
 * </ul>
 *
 * <p>Immutable and thread-safe.
 *
 * @param load the engine's load gauges, or {@code null} when it has neither a running nor a waiting
 *     gauge
 * @param startSeconds the engine process's start time in seconds since the epoch, or NaN when absent
 * @param capacityTokens the KV capacity in tokens, or {@code -1} when absent
 * @param lora the adapters running and waiting, {@link LoraAffinity.State#UNKNOWN} when not reported
 */
record EngineScrape(EngineLoad load, double startSeconds, long capacityTokens, LoraAffinity.State lora) {
  private static final Set<String> NAMES = Set.of(
      "vllm:num_requests_running", "sglang:num_running_reqs",
      "vllm:num_requests_waiting", "sglang:num_queue_reqs",
      "vllm:kv_cache_usage_perc", "sglang:token_usage",
      "vllm:gpu_cache_usage_perc",
      "process_start_time_seconds",
      "vllm:cache_config_info", "sglang:max_total_num_tokens",
      LoraAffinity.INFO_METRIC);

  /** Reads {@code metricsText} (see the type's doc); malformed lines are skipped. */
  static EngineScrape read(String metricsText) {
    // running, waiting, KV usage, KV usage under vLLM's deprecated name: sums and series counts
    double[] vllm = new double[4];
    int[] vllmSeen = new int[4];
    double[] sglang = new double[4];
    int[] sglangSeen = new int[4];
    double start = Double.NaN;
    boolean startSeen = false;
    long vllmCapacity = -1;
    long sglangCapacity = -1;
    boolean sglangCapacitySeen = false;
    List<Sample> lora = new ArrayList<>(1);
    for (Sample s : PrometheusText.samples(metricsText, NAMES::contains)) {
      String name = s.name();
      double v = s.value();
      switch (name) {
        case "process_start_time_seconds" -> {
          if (!startSeen) {
            startSeen = true;
            start = v > 0 && !Double.isInfinite(v) ? v : Double.NaN;
          }
        }
        case "vllm:cache_config_info" -> {
          if (vllmCapacity < 0) {
            vllmCapacity = capacity(s);
          }
        }
        case "sglang:max_total_num_tokens" -> {
          if (!sglangCapacitySeen) {
            sglangCapacitySeen = true;
            sglangCapacity = v >= 1 && !Double.isInfinite(v) ? (long) v : -1;
          }
        }
        case LoraAffinity.INFO_METRIC -> lora.add(s);
        default -> {
          int slot = switch (name) {
            case "vllm:num_requests_running", "sglang:num_running_reqs" -> 0;
            case "vllm:num_requests_waiting", "sglang:num_queue_reqs" -> 1;
            case "vllm:kv_cache_usage_perc", "sglang:token_usage" -> 2;
            default -> 3; // vllm:gpu_cache_usage_perc
          };
          if (!(v >= 0) || Double.isInfinite(v)) {
            continue;
          }
          boolean sg = name.startsWith("sglang:");
          (sg ? sglang : vllm)[slot] += v;
          (sg ? sglangSeen : vllmSeen)[slot]++;
        }
      }
    }
    EngineLoad load = null;
    if (vllmSeen[0] + vllmSeen[1] > 0) {
      load = engineLoad(vllm, vllmSeen);
    } else if (sglangSeen[0] + sglangSeen[1] > 0) {
      load = engineLoad(sglang, sglangSeen);
    }
    return new EngineScrape(load, start, vllmCapacity > 0 ? vllmCapacity : sglangCapacity,
        LoraAffinity.state(lora));
  }

  private static EngineLoad engineLoad(double[] sums, int[] seen) {
    int kvSlot = seen[2] > 0 ? 2 : 3;
    double kv = seen[kvSlot] == 0 ? -1 : Math.min(1, sums[kvSlot] / seen[kvSlot]);
    return new EngineLoad((int) Math.min(Integer.MAX_VALUE, Math.round(sums[0])),
        (int) Math.min(Integer.MAX_VALUE, Math.round(sums[1])), kv);
  }

  /** {@code num_gpu_blocks × block_size} of a {@code vllm:cache_config_info} sample, -1 if unreadable. */
  private static long capacity(Sample info) {
    String blocks = info.label("num_gpu_blocks");
    String size = info.label("block_size");
    if (blocks == null || size == null) {
      return -1;
    }
    try {
      long b = Long.parseLong(blocks);
      long tokensPerBlock = Long.parseLong(size);
      return b < 0 || tokensPerBlock < 0 ? -1 : Math.multiplyExact(b, tokensPerBlock);
    } catch (NumberFormatException | ArithmeticException e) {
      return -1;
    }
  }
}
