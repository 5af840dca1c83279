package dev.kvroute.bench.load;

import dev.kvroute.bench.workload.OpenLoopWorkload;
import dev.kvroute.bench.workload.Workload;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Runs a workload through a router and turns the measurements into the explainer's figures: the load
 * driver's client-side measurements plus each engine's {@code /metrics} scraped before and after the
 * run (prefill seconds per replica; prefix-cache counters as a cross-check of the hit rate).
 *
 * <p>Works against any vLLM-compatible fleet: the bundled mock engines or real vLLM replicas (started
 * with {@code --enable-prompt-tokens-details} so usage carries cached tokens).
 *
 * <p>Thread-safe (stateless).
 */
public final class LoadTest {
  private LoadTest() {}

  /**
   * Sends {@code workload} to {@code settings.target()} and measures it as policy {@code label}.
   *
   * @param engines base URLs of the fleet's engines, in fleet order (their {@code /metrics} is read)
   * @throws IOException if an engine's metrics or the target's model list cannot be read
   * @throws InterruptedException if interrupted
   */
  public static MeasuredRun run(
      Workload workload, LoadSettings settings, List<URI> engines, String label, LoadProgress progress)
      throws IOException, InterruptedException {
    return measure(engines, label, () -> LoadDriver.run(workload, settings, progress));
  }

  /**
   * As {@link #run(Workload, LoadSettings, List, String, LoadProgress)}, each session naming the model
   * {@code sessionModel} gives for its index (the multi-model workload's models and adapters).
   *
   * @throws IOException if an engine's metrics cannot be read
   * @throws InterruptedException if interrupted
   */
  public static MeasuredRun run(
      Workload workload, LoadSettings settings, List<URI> engines, String label, LoadProgress progress,
      java.util.function.IntFunction<String> sessionModel) throws IOException, InterruptedException {
    return measure(engines, label, () -> LoadDriver.run(workload, settings, progress, sessionModel));
  }

  /**
   * Sends {@code traffic}'s routed sessions to {@code settings}' routers and its side sessions straight
   * to their engines ({@link LoadDriver#run(dev.kvroute.bench.workload.SideTraffic, LoadSettings, List,
   * LoadProgress)}), and measures the routed ones as policy {@code label}.
   *
   * @param engines base URLs of the fleet's engines, in fleet order (side traffic goes to them, their
   *     {@code /metrics} is read)
   * @throws IOException if an engine's metrics or the target's model list cannot be read
   * @throws InterruptedException if interrupted
   */
  public static MeasuredRun run(
      dev.kvroute.bench.workload.SideTraffic traffic, LoadSettings settings, List<URI> engines, String label,
      LoadProgress progress) throws IOException, InterruptedException {
    return measure(engines, label, () -> LoadDriver.run(traffic, settings, engines, progress));
  }

  /**
   * Sends an open-loop {@code workload} ({@link OpenLoopDriver}) to {@code settings.target()} and
   * measures it as policy {@code label}.
   *
   * @param engines base URLs of the fleet's engines, in fleet order (their {@code /metrics} is read)
   * @throws IOException if an engine's metrics or the target's model list cannot be read
   * @throws InterruptedException if interrupted
   */
  public static MeasuredRun run(
      OpenLoopWorkload workload, LoadSettings settings, List<URI> engines, String label, LoadProgress progress)
      throws IOException, InterruptedException {
    return measure(engines, label, () -> OpenLoopDriver.run(workload, settings, progress));
  }

  /** A driver's run between two scrapes of the engines' metrics. */
  private interface Drive {
    LoadResult run() throws IOException, InterruptedException;
  }

  private static MeasuredRun measure(List<URI> engines, String label, Drive drive)
      throws IOException, InterruptedException {
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    List<EngineMetrics> before = scrape(http, engines);
    LoadResult load = drive.run();
    List<EngineMetrics> after = scrape(http, engines);
    List<EngineMetrics> delta = new ArrayList<>();
    List<Double> prefill = new ArrayList<>();
    for (int i = 0; i < engines.size(); i++) {
      EngineMetrics d = after.get(i).minus(before.get(i));
      delta.add(d);
      prefill.add(d.prefillSeconds());
    }
    return new MeasuredRun(load.figures().figures(label, prefill), load, delta);
  }

  private static List<EngineMetrics> scrape(HttpClient http, List<URI> engines)
      throws IOException, InterruptedException {
    List<EngineMetrics> out = new ArrayList<>();
    for (URI e : engines) {
      out.add(EngineMetrics.scrape(http, e));
    }
    return out;
  }
}
