package dev.kvroute.proxy;

import dev.kvroute.core.BackendId;
import dev.kvroute.core.index.KvEventIndex;
import dev.kvroute.core.kvevents.KvEventStream;
import dev.kvroute.proxy.config.BackendConfig;
import dev.kvroute.proxy.config.IndexConfig;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import java.lang.System.Logger.Level;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToDoubleFunction;
import org.zeromq.ZContext;

/**
 * The router's KV-event subscriptions (index modes {@code precise} and {@code hybrid}): one
 * {@link KvEventSubscriber} per backend that publishes, started when the backend is added and closed
 * when it is removed, and their metrics. Which backends: in precise mode every backend, at its
 * {@code kvEvents} endpoint or {@code tcp://HOST:index.kvEventsPort}; in hybrid mode the backends that
 * name a {@code kvEvents} endpoint. The replay endpoint is the backend's {@code kvEventsReplay}, else
 * {@code tcp://HOST:index.kvEventsReplayPort} when that port is set, else none.
 *
 * <p>Metrics (tag {@code backend}): {@code kvroute.kv.events.messages} (received, whether they decode
 * or not), {@code kvroute.kv.events.duplicates} (live batches a replay had applied already),
 * {@code kvroute.kv.events{result=applied|ignored|dropped|undecodable}}, {@code kvroute.kv.events.gaps},
 * {@code kvroute.kv.events.missed} (batches lost for good), {@code kvroute.kv.events.replays},
 * {@code kvroute.kv.events.replay.failures}, {@code kvroute.kv.events.restarts},
 * {@code kvroute.kv.events.clears}, {@code kvroute.kv.events.lag} (seconds, the last batch's age when
 * applied), {@code kvroute.kv.events.blocks} and {@code kvroute.index.precise} (1 while the backend is
 * matched from its events, 0 while from the approximate view). Each mode change is logged once.
 *
 * <p>Thread-safe.
 */
final class KvEventSubscriptions implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(KvEventSubscriptions.class.getName());

  private final IndexConfig config;
  private final KvEventIndex index;
  private final MeterRegistry registry;
  private final ZContext context = new ZContext(1);
  private final Map<BackendId, KvEventSubscriber> subscribers = new ConcurrentHashMap<>();
  private final Map<BackendId, List<Meter>> meters = new ConcurrentHashMap<>();

  KvEventSubscriptions(IndexConfig config, KvEventIndex index, MeterRegistry registry) {
    this.config = config;
    this.index = index;
    this.registry = registry;
    index.onModeChange((backend, mode, why) -> LOG.log(mode == KvEventIndex.Mode.PRECISE ? Level.INFO : Level.WARNING,
        "backend {0}: prefix index {1} ({2})", backend, mode == KvEventIndex.Mode.PRECISE
            ? "from its KV events" : "from the approximate view", why));
  }

  /** The PUB endpoint to subscribe to for {@code b}, or {@code null} when it is not subscribed. */
  static URI endpoint(IndexConfig config, BackendConfig b) {
    if (b.kvEvents() != null) {
      return b.kvEvents();
    }
    return config.mode().equals("precise") ? tcp(b.host(), config.kvEventsPort()) : null;
  }

  /** The replay endpoint for {@code b}, or {@code null}. */
  static URI replayEndpoint(IndexConfig config, BackendConfig b) {
    if (b.kvEventsReplay() != null) {
      return b.kvEventsReplay();
    }
    return config.kvEventsReplayPort() > 0 ? tcp(b.host(), config.kvEventsReplayPort()) : null;
  }

  private static URI tcp(String host, int port) {
    return URI.create("tcp://" + (host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port);
  }

  /** Subscribes to {@code b}'s events if it publishes (see the class doc). */
  void added(Backend b) {
    URI endpoint = endpoint(config, b.config());
    BackendId id = b.id();
    if (endpoint == null) {
      return;
    }
    KvEventSubscriber s = new KvEventSubscriber(id, endpoint, replayEndpoint(config, b.config()), config.topic(),
        config.replayTimeout(), index, context);
    KvEventSubscriber previous = subscribers.put(id, s);
    if (previous != null) {
      previous.close();
    }
    index.enableEvents(id);
    registerMeters(id, s);
    s.start();
  }

  /** Stops {@code id}'s subscription, if any. */
  void removed(BackendId id) {
    KvEventSubscriber s = subscribers.remove(id);
    if (s != null) {
      s.close();
    }
    List<Meter> m = meters.remove(id);
    if (m != null) {
      m.forEach(registry::remove);
    }
  }

  /** The subscriber of {@code id}, or {@code null} (for tests). */
  KvEventSubscriber subscriber(BackendId id) {
    return subscribers.get(id);
  }

  private void registerMeters(BackendId id, KvEventSubscriber s) {
    Tags tags = Tags.of("backend", id.name());
    KvEventStream st = s.stream();
    List<Meter> list = new ArrayList<>();
    list.add(counter("kvroute.kv.events.messages", "KV-event messages received from the engine", tags, s,
        x -> x.stream().received() + x.malformed()));
    list.add(counter("kvroute.kv.events.duplicates", "Live KV-event batches a replay had already applied, skipped",
        tags, st, KvEventStream::duplicates));
    list.add(counter("kvroute.kv.events", "KV events by what the index did with them", tags.and("result", "applied"),
        index, i -> stat(i, id, KvEventIndex.ViewStats::applied)));
    list.add(counter("kvroute.kv.events", "KV events by what the index did with them", tags.and("result", "ignored"),
        index, i -> stat(i, id, KvEventIndex.ViewStats::ignored)));
    list.add(counter("kvroute.kv.events", "KV events by what the index did with them", tags.and("result", "dropped"),
        index, i -> stat(i, id, KvEventIndex.ViewStats::dropped)));
    list.add(counter("kvroute.kv.events", "KV events by what the index did with them", tags.and("result", "undecodable"),
        s, x -> x.stream().undecodable() + x.malformed()));
    list.add(counter("kvroute.kv.events.gaps", "Gaps in the engine's KV-event sequence numbers", tags, st,
        KvEventStream::gaps));
    list.add(counter("kvroute.kv.events.missed", "KV-event batches lost for good (a gap no replay filled)", tags, st,
        KvEventStream::missed));
    list.add(counter("kvroute.kv.events.replays", "Replay requests sent to the engine's replay socket", tags, st,
        KvEventStream::replays));
    list.add(counter("kvroute.kv.events.replay.failures", "Replay requests without a complete answer", tags, st,
        KvEventStream::replayFailures));
    list.add(counter("kvroute.kv.events.restarts", "KV-event publisher restarts (sequence numbers starting over)",
        tags, st, KvEventStream::restarts));
    list.add(counter("kvroute.kv.events.clears", "Times the precise view was emptied (AllBlocksCleared, lost "
        + "events, restarts)", tags, index, i -> stat(i, id, KvEventIndex.ViewStats::clears)));
    list.add(Gauge.builder("kvroute.kv.events.lag", index, i -> {
          KvEventIndex.ViewStats v = i.stats(id);
          return v == null || v.lastEventLagNanos() < 0 ? Double.NaN : v.lastEventLagNanos() / 1e9;
        }).description("Age of the last KV-event batch when applied (now minus its ts)")
        .baseUnit("seconds").tags(tags).register(registry));
    list.add(Gauge.builder("kvroute.kv.events.blocks", index, i -> stat(i, id, v -> v.blocks()))
        .description("Engine blocks the precise view holds").baseUnit("blocks").tags(tags).register(registry));
    list.add(Gauge.builder("kvroute.index.precise", index, i -> i.mode(id) == KvEventIndex.Mode.PRECISE ? 1 : 0)
        .description("1 while the backend is matched from its KV events, 0 while from the approximate view")
        .tags(tags).register(registry));
    List<Meter> previous = meters.put(id, list);
    if (previous != null) {
      previous.forEach(registry::remove);
    }
  }

  private static double stat(KvEventIndex index, BackendId id, ToDoubleFunction<KvEventIndex.ViewStats> f) {
    KvEventIndex.ViewStats v = index.stats(id);
    return v == null ? 0 : f.applyAsDouble(v);
  }

  private <T> Meter counter(String name, String description, Tags tags, T source, ToDoubleFunction<T> f) {
    return FunctionCounter.builder(name, source, f).description(description).tags(tags).register(registry);
  }

  @Override
  public void close() {
    for (BackendId id : List.copyOf(subscribers.keySet())) {
      removed(id);
    }
    context.close();
  }
}
