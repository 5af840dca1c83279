package dev.kvroute.proxy.config;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;

/**
 * One inference replica behind the router.
 *
 * <p>YAML takes either the object form or the same one-line form as the {@code --backend} flag:
 *
 * <pre>
 * backends:
 *   - url: http://10.0.0.5:8000
 *     name: gpu-0              # optional; default "host:port"
 *     capacityTokens: 262144   # optional; default: read from the engine's /metrics
 *     models: [llama-3-8b, sql-lora]  # optional; default: discovered from its GET /v1/models
 *   - http://10.0.0.6:8000,name=gpu-1,capacityTokens=262144,models=llama-3-8b|sql-lora
 * </pre>
 *
 * <p>Immutable and thread-safe.
 *
 * @param url the replica's base URL; {@code http} only; a path (e.g. {@code /serving}) is prefixed to
 *     every forwarded request path
 * @param name the backend id used in the {@code x-kvroute-backend} header, metrics tags and the admin
 *     API; defaults to {@code host:port}; not {@value #RESERVED_NAME} (the metrics' label of requests
 *     that reached no backend)
 * @param capacityTokens the replica's KV cache capacity in tokens, bounding its view in the prefix
 *     index; {@code 0} means unknown: read {@code num_gpu_blocks × block_size} from its
 *     {@code vllm:cache_config_info} metric, else use {@code routing.defaultCapacityTokens}
 * @param models the model and LoRA adapter names the replica serves; when given, they override what
 *     its {@code GET /v1/models} says (nothing is discovered); empty means discover them
 * @param kvEvents the engine's KV-event PUB endpoint ({@code tcp://HOST:PORT}, vLLM's
 *     {@code --kv-events-config} {@code endpoint} as seen from the router), or {@code null}: in precise
 *     mode {@code tcp://HOST:index.kvEventsPort}, in hybrid mode no events
 * @param kvEventsReplay the engine's replay ROUTER endpoint ({@code replay_endpoint}), or {@code null}:
 *     {@code tcp://HOST:index.kvEventsReplayPort} when that port is set, else no replay
 */
public record BackendConfig(URI url, String name, long capacityTokens, List<String> models, URI kvEvents,
    URI kvEventsReplay) {
  /** The one name a backend may not take: the metrics' {@code backend} label of requests that reached none. */
  public static final String RESERVED_NAME = "none";

  /** The largest capacity accepted: 2^36 tokens, far beyond any engine's KV cache. */
  public static final long MAX_CAPACITY_TOKENS = 1L << 36;

  /** A replica whose served models are discovered. */
  public BackendConfig(URI url, String name, long capacityTokens) {
    this(url, name, capacityTokens, List.of());
  }

  /** A replica without KV-event endpoints of its own. */
  public BackendConfig(URI url, String name, long capacityTokens, List<String> models) {
    this(url, name, capacityTokens, models, null, null);
  }

  private static void checkZmqEndpoint(String key, URI endpoint) {
    if (endpoint == null) {
      return;
    }
    boolean ok = "tcp".equalsIgnoreCase(endpoint.getScheme())
        ? endpoint.getHost() != null && endpoint.getPort() >= 1 && endpoint.getPort() <= 65_535
        : "ipc".equalsIgnoreCase(endpoint.getScheme()) || "inproc".equalsIgnoreCase(endpoint.getScheme());
    if (!ok) {
      throw new IllegalArgumentException(key + ": " + endpoint + " (expected: tcp://HOST:PORT, ipc://PATH or inproc://NAME)");
    }
  }

  private static URI zmqEndpoint(String key, String value) {
    try {
      return new URI(value);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException(key + ": " + value + " (expected: tcp://HOST:PORT)");
    }
  }

  public BackendConfig {
    models = List.copyOf(models == null ? List.of() : models);
    for (String m : models) {
      if (m == null || m.isBlank() || m.length() > 256 || m.chars().anyMatch(c -> c < 0x20 || c == 0x7f || c == '|' || c == ',')) {
        throw new IllegalArgumentException("models: " + String.valueOf(m).replaceAll("\\p{Cntrl}", "?")
            + " (expected: names of at most 256 characters, no control characters, '|' or ',')");
      }
    }
    Checks.notNull("url", url, "an http:// URL");
    if (!"http".equalsIgnoreCase(url.getScheme()) || url.getHost() == null) {
      throw new IllegalArgumentException("url: " + url + " (expected: an http://host[:port][/path] URL)");
    }
    if (url.getRawQuery() != null || url.getRawFragment() != null) {
      throw new IllegalArgumentException("url: " + url + " (expected: no query or fragment)");
    }
    if (url.getRawUserInfo() != null) {
      throw new IllegalArgumentException("url: " + url.getHost() + " (expected: no user info; kvroute sends no credentials upstream)");
    }
    if (url.getPort() != -1 && (url.getPort() < 1 || url.getPort() > 65_535)) {
      throw new IllegalArgumentException("url: " + url + " (expected: a port in 1..65535)");
    }
    if (name == null || name.isBlank()) {
      name = url.getHost() + ":" + port(url);
    }
    if (name.length() > 128 || name.chars().anyMatch(c -> c < 0x20 || c == 0x7f || c == '/')) {
      throw new IllegalArgumentException("name: " + name.replaceAll("\\p{Cntrl}", "?")
          + " (expected: at most 128 characters, no control characters or '/'; it is a metric label and a URL path segment)");
    }
    if (name.equals(RESERVED_NAME)) {
      throw new IllegalArgumentException("name: " + RESERVED_NAME + " (expected: another name; the metrics' backend "
          + "label says none for requests that reached no backend)");
    }
    if (!name.equals(name.strip())) {
      // a header value cannot begin or end with whitespace (x-kvroute-backend): such a name made
      // every response from the backend fail as a broken connection
      throw new IllegalArgumentException("name: \"" + name + "\" (expected: no whitespace at either end)");
    }
    Checks.nonNegative("capacityTokens", capacityTokens);
    if (capacityTokens > MAX_CAPACITY_TOKENS) {
      throw new IllegalArgumentException("capacityTokens: " + capacityTokens + " (expected: <= " + MAX_CAPACITY_TOKENS + ")");
    }
    checkZmqEndpoint("kvEvents", kvEvents);
    checkZmqEndpoint("kvEventsReplay", kvEventsReplay);
  }

  @JsonCreator(mode = JsonCreator.Mode.PROPERTIES)
  static BackendConfig fromYaml(
      @JsonProperty("url") URI url,
      @JsonProperty("name") String name,
      @JsonProperty("capacityTokens") Long capacityTokens,
      @JsonProperty("models") List<String> models,
      @JsonProperty("kvEvents") URI kvEvents,
      @JsonProperty("kvEventsReplay") URI kvEventsReplay) {
    return new BackendConfig(url, name, capacityTokens == null ? 0 : capacityTokens, models, kvEvents, kvEventsReplay);
  }

  /** A backend at {@code url} with the default name and capacity discovered from the engine. */
  public static BackendConfig of(URI url) {
    return new BackendConfig(url, null, 0);
  }

  /**
   * Parses the one-line form {@code URL[,name=NAME][,capacityTokens=N][,models=A|B]}.
   *
   * @throws IllegalArgumentException naming the part that is wrong
   */
  @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
  public static BackendConfig parse(String spec) {
    String[] parts = Checks.nonBlank("backend", spec).trim().split(",");
    URI url;
    try {
      url = new URI(parts[0].trim());
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("url: " + parts[0] + " (expected: an http://host[:port][/path] URL)");
    }
    String name = null;
    long capacity = 0;
    List<String> models = List.of();
    URI kvEvents = null;
    URI kvEventsReplay = null;
    for (int i = 1; i < parts.length; i++) {
      String part = parts[i].trim();
      int eq = part.indexOf('=');
      String key = eq < 0 ? part : part.substring(0, eq).trim();
      String value = eq < 0 ? "" : part.substring(eq + 1).trim();
      switch (key) {
        case "name":
          name = value;
          break;
        case "capacityTokens":
          try {
            capacity = Long.parseLong(value);
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException("capacityTokens: " + value + " (expected: a whole number >= 0)");
          }
          break;
        case "models":
          models = java.util.Arrays.stream(value.split("\\|")).map(String::trim).toList();
          break;
        case "kvEvents":
          kvEvents = zmqEndpoint(key, value);
          break;
        case "kvEventsReplay":
          kvEventsReplay = zmqEndpoint(key, value);
          break;
        default:
          throw new IllegalArgumentException("backend: " + spec
              + " (expected: URL[,name=NAME][,capacityTokens=N][,models=A|B][,kvEvents=tcp://HOST:PORT][,kvEventsReplay=tcp://HOST:PORT])");
      }
    }
    return new BackendConfig(url, name, capacity, models, kvEvents, kvEventsReplay);
  }

  /** The host to connect to. */
  public String host() {
    return url.getHost();
  }

  /** The port to connect to (80 when the URL gives none). */
  public int port() {
    return port(url);
  }

  /** The path prefix for forwarded requests, without a trailing slash; empty when none. */
  public String basePath() {
    String p = url.getRawPath();
    if (p == null) {
      return "";
    }
    while (p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    return p;
  }

  /** The {@code Host} header value for requests to this backend. */
  public String authority() {
    return url.getPort() < 0 ? url.getHost() : url.getHost() + ":" + url.getPort();
  }

  /** The port of {@code url}, 80 when it names none. */
  public static int port(URI url) {
    return url.getPort() < 0 ? 80 : url.getPort();
  }

  /** The one-line form accepted by {@link #parse}. */
  @Override
  public String toString() {
    return url + ",name=" + name + (capacityTokens > 0 ? ",capacityTokens=" + capacityTokens : "")
        + (models.isEmpty() ? "" : ",models=" + String.join("|", models))
        + (kvEvents != null ? ",kvEvents=" + kvEvents : "")
        + (kvEventsReplay != null ? ",kvEventsReplay=" + kvEventsReplay : "");
  }
}
