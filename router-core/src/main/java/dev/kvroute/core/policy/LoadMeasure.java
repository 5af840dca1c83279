package dev.kvroute.core.policy;

import dev.kvroute.core.load.BackendLoad;
import java.util.Locale;

/**
 * Which number of a {@link BackendLoad} load-based rules compare: this router's own ({@link #own}),
 * or with {@link PolicyConfig#foreignLoad()} that plus the engine-reported load this router did not
 * send ({@link #of}; {@link BackendLoad#foreignRequests()}, {@link BackendLoad#foreignWaiting()}), so
 * that several router replicas in front of one fleet, or clients calling an engine directly, are
 * seen. Counting the foreign part is off by default: with a 1 s scrape it balanced the fleet better
 * but raised the router's mean TTFT in every measured pair ({@code bench/scripts/foreign-load.sh},
 * docs/operations.md).
 */
public enum LoadMeasure {
  /**
   * Requests routed and not yet finished, streams included until their last byte: what SGLang's
   * router counts ({@code load_counter}, {@code WorkerLoadGuard}); plus the foreign requests.
   */
  IN_FLIGHT_REQUESTS("in-flight"),

  /**
   * Requests routed and not yet past their first token: the backend's prefill queue, the load the
   * seed explainer's single-request prefill replicas balance on; plus the foreign waiting requests.
   */
  PREFILLING_REQUESTS("prefilling");

  private final String configName;

  LoadMeasure(String configName) {
    this.configName = configName;
  }

  /** The name used in configuration: {@code in-flight} or {@code prefilling}. */
  public String configName() {
    return configName;
  }

  /** This router's own share, without the engine-reported foreign part. */
  public long own(BackendLoad load) {
    return this == IN_FLIGHT_REQUESTS ? load.inFlightRequests() : load.prefillingRequests();
  }

  /** This router's own share plus the engine-reported foreign part. */
  public long of(BackendLoad load) {
    return this == IN_FLIGHT_REQUESTS
        ? (long) load.inFlightRequests() + load.foreignRequests()
        : (long) load.prefillingRequests() + load.foreignWaiting();
  }

  /** {@link #of} when {@code foreign}, else {@link #own}. */
  public long of(BackendLoad load, boolean foreign) {
    return foreign ? of(load) : own(load);
  }

  /**
   * The measure named {@code name}: its {@link #configName() configuration name} or its constant
   * name, case-insensitive.
   *
   * @throws IllegalArgumentException for any other name
   */
  public static LoadMeasure fromName(String name) {
    for (LoadMeasure m : values()) {
      if (m.configName.equalsIgnoreCase(name) || m.name().equalsIgnoreCase(name)) {
        return m;
      }
    }
    throw new IllegalArgumentException(
        "loadMeasure: " + name + " (expected: in-flight or prefilling)");
  }

  @Override
  public String toString() {
    return configName.toLowerCase(Locale.ROOT);
  }
}
